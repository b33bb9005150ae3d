// The Java bindings tether-bindgen generates for the sample plugin (tests/plugins/sample), used
// as a user would (`cargo xtask test --only java` compiles them with javac and runs this):
//   java BindingsCheck ok     typed calls, defaults by overload, nullability and keyword
//                             escaping (sample.Names), the packed plugin from the class path
//   java BindingsCheck stale  -Dsample.plugin=<the `changed` build>: loading fails naming the
//                             changed item
// Exits with status 1 (printing what failed) if a check does not hold.

import dev.tether.bindings.sample.Counter;
import dev.tether.bindings.sample.Names;
import dev.tether.bindings.sample.SampleModule;
import dev.tether.ffi.TetherAttributeError;
import dev.tether.ffi.TetherValueError;

import java.util.ArrayList;
import java.util.List;

public final class BindingsCheck {
    private static final List<String> FAILURES = new ArrayList<>();

    private static void check(String label, boolean holds) {
        System.out.println("  " + (holds ? "ok  " : "FAIL") + " " + label);
        if (!holds) {
            FAILURES.add(label);
        }
    }

    public static void main(String[] args) {
        String mode = args.length == 1 ? args[0] : "";
        switch (mode) {
            case "ok" -> ok();
            case "stale" -> stale();
            default -> {
                System.err.println("usage: java BindingsCheck ok|stale");
                System.exit(2);
            }
        }
        if (!FAILURES.isEmpty()) {
            System.out.println("FAILED: " + FAILURES);
            System.exit(1);
        }
        System.out.println("bindings check (" + mode + "): every check holds");
    }

    private static void ok() {
        Counter c = new Counter(3);
        check("incrementBy() uses the plugin's default (1)", c.incrementBy() == 4);
        check("incrementBy(5)", c.incrementBy(5) == 9);
        check("getCount() is a long", c.getCount() == 9L);
        check("isEven() is a boolean", !c.isEven());
        Names names = new Names();
        check("new Names() leaves the label to the plugin's default (None: null)", names.getLabel() == null);
        Long none = names.import_(1);
        check("import_(class_) (a method and a parameter named like keywords) is null without a label", none == null);
        names.setLabel("abc");
        check("setLabel/getLabel", "abc".equals(names.getLabel()));
        check("import_(2) is the label's length plus 2", Long.valueOf(5).equals(names.import_(2)));
        names.setLabel(null);
        check("setLabel(null) (Optional[str] is a nullable String)", names.getLabel() == null);
        check("new Names(\"x\")", "x".equals(new Names("x").getLabel()));
        Counter made = SampleModule.makeCounter(7);
        check("SampleModule.makeCounter returns a Counter", made.getCount() == 7);
        check("the generated class is the wrapper: construct(\"Counter\") by short name is a Counter",
                SampleModule.module().construct("Counter", 1L) instanceof Counter);
        check("SampleModule.greet", SampleModule.greet("java").equals("hello, java"));
        try {
            c.set("count", 1L);
            check("setting a read-only field throws TetherAttributeError", false);
        } catch (TetherAttributeError e) {
            check("setting a read-only field throws TetherAttributeError", e.kind().equals("AttributeError"));
        }
        try {
            c.call("no_such_method");
            check("a missing method throws TetherAttributeError", false);
        } catch (TetherAttributeError e) {
            check("a missing method throws TetherAttributeError", e.kind().equals("AttributeError"));
        }
    }

    private static void stale() {
        try {
            SampleModule.module();
            check("loading bindings against a changed plugin fails", false);
        } catch (TetherValueError e) {
            System.out.println("  " + e.getMessage());
            check("the error names the changed item", e.getMessage().contains("method sample.Counter.increment_by changed"));
            check("and says to regenerate", e.getMessage().contains("regenerate"));
        }
    }
}
