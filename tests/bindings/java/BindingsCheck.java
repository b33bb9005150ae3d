// The Java bindings tether-bindgen generates for the sample plugin (tests/plugins/sample), used
// as a user would (`cargo xtask test --only java` compiles them with javac and runs this, from
// the class path and, on Temurin 25, from the module path):
//   java BindingsCheck ok          typed calls, defaults by overload, nullability and keyword
//                                  escaping (sample.Names), a static method, errors word for
//                                  word those of the reflective calls, the packed plugin from
//                                  the class path (or -Dsample.plugin)
//   java BindingsCheck reflective  -Dsample.plugin=<the plugin>: loaded through Tether.loadModule
//                                  before the bindings are used, its objects are still instances
//                                  of the generated classes
//   java BindingsCheck stale       -Dsample.plugin=<the `changed` build>: loading fails naming the
//                                  changed item; loaded reflectively, its objects stay untyped
// Exits with status 1 (printing what failed) if a check does not hold.

import dev.tether.bindings.sample.Counter;
import dev.tether.bindings.sample.Names;
import dev.tether.bindings.sample.SampleModule;
import dev.tether.ffi.Tether;
import dev.tether.ffi.TetherAttributeError;
import dev.tether.ffi.TetherInstance;
import dev.tether.ffi.TetherModule;
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
            case "reflective" -> reflective();
            case "stale" -> stale();
            default -> {
                System.err.println("usage: java BindingsCheck ok|reflective|stale");
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
        // A function of ints: `long scale(long, long)`, nothing boxed (its int entry; on JDK 22+
        // a critical downcall), wrapping as the plugin's i64 does.
        check("SampleModule.scale", SampleModule.scale(6, 7) == 42L);
        check("SampleModule.scale wraps", SampleModule.scale(Long.MAX_VALUE, 2) == -2L);
        Counter parsed = Counter.parse("ff", 16);
        check("the static method Counter.parse(text, radix) returns a Counter", parsed.getCount() == 255L);
        check("Counter.parse(text) leaves radix to the plugin's default (10)", Counter.parse("12").getCount() == 12L);

        // Generated methods call their method's Function directly; what they throw is what the
        // reflective call by name throws, word for word (and of the same class).
        String badText = failure(() -> Counter.parse("zz"));
        System.out.println("  Counter.parse(\"zz\") -> " + badText);
        check("a static method's error is the reflective call's",
                badText.contains("\"zz\" is not a base-10 number") && badText.equals(failure(() -> c.call("parse", "zz"))));
        String nullText = failure(() -> Counter.parse(null));
        System.out.println("  Counter.parse(null) -> " + nullText);
        check("a null argument's error names the parameter, as the reflective call's does",
                nullText.contains("sample.Counter.parse() argument 'text'")
                        && nullText.equals(failure(() -> c.call("parse", (Object) null))));
        Counter closed = new Counter(1);
        closed.close();
        String closedText = failure(closed::increment);
        check("a closed wrapper's method fails as its reflective call does",
                closedText.startsWith("IllegalStateException") && closedText.equals(failure(() -> closed.call("increment"))));
        check("the generated method and TetherType.methodFunction run the same Function",
                Tether.type(Counter.KEY).methodFunction("increment_by").call(c, 2L).equals(c.getCount())
                        && c.incrementBy(1) == 12L);
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

    /** The plugin loaded through the reflective API before the bindings are used. */
    private static void reflective() {
        TetherModule m = Tether.loadModule(System.getProperty(SampleModule.PLUGIN_PROPERTY));
        Object made = m.construct("Counter", 1L);
        check("Tether.loadModule first: construct gives the generated class", made instanceof Counter);
        check("Tether.loadModule first: a function's result is the generated class",
                m.function("make_counter").call(2L) instanceof Counter);
        check("Tether.loadModule first: the other type too", m.construct("sample.Names") instanceof Names);
        check("the bindings use that module (no second copy is loaded)", SampleModule.module() == m);
        check("typed calls on the reflectively made object", made instanceof Counter c && c.incrementBy() == 2L);
    }

    private static void stale() {
        // Loaded reflectively, a plugin the bindings were not generated from loads, and its
        // objects stay untyped; the bindings' loader then names what changed.
        TetherModule m = Tether.loadModule(System.getProperty(SampleModule.PLUGIN_PROPERTY));
        Object made = m.construct("Counter", 1L);
        check("a changed plugin loaded through Tether.loadModule keeps TetherInstance objects",
                made instanceof TetherInstance && !(made instanceof Counter));
        try {
            SampleModule.module();
            check("loading bindings against a changed plugin fails", false);
        } catch (TetherValueError e) {
            System.out.println("  " + e.getMessage());
            check("the error names the changed item", e.getMessage().contains("method sample.Counter.increment_by changed"));
            check("and says to regenerate", e.getMessage().contains("regenerate"));
        }
    }

    /** What {@code call} throws: its class's simple name and message ("none" if it returns). */
    private static String failure(Runnable call) {
        try {
            call.run();
            return "none";
        } catch (RuntimeException e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }
}
