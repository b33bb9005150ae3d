// A deliberately wrong call on the typed scene bindings: javac must reject it (find takes a
// String). `cargo xtask test --only java` checks that it does and that it names this line.

import dev.tether.examples.scene.Node;
import dev.tether.examples.scene.Scene;

public final class WrongCall {
    public static void main(String[] args) {
        Scene scene = new Scene("world");
        Node door = scene.find(3); // WRONG: find(String name)
        System.out.println(door);
    }
}
