package dev.tether.ffi;

import static dev.tether.ffi.TestSupport.t;
import static org.junit.jupiter.api.Assertions.*;

import java.util.List;

import org.junit.jupiter.api.Test;

/** Signatures on the Java side: signature(), parameters(), reflection, defaults, messages. */
class SignatureTest {
    private static TetherModule sample() {
        return Tether.loadModule(TestSupport.plugin().toString());
    }

    @Test
    void signatureIsTheCoresRenderingForJava() {
        assertEquals("Long add(Long a, Long b)", t("add").signature());
        assertEquals("Object echo(Object x)", t("echo").signature());
        assertEquals("Pair makePair(Object first, Object second)", t("make_pair").signature());
        assertEquals("String greet(String name, String greeting)", t("greet").signature());
        assertEquals("Long", t("add").resultType());
        assertEquals("Pair", t("make_pair").resultType());
        // A packed function without a declared arity: a best effort.
        assertEquals("Object call(Object... args)", t("call").signature());
    }

    @Test
    void parametersHaveJavaNamesTypesAndDefaults() {
        assertEquals(
                List.of(new TetherParameter("a", "Long", false, null), new TetherParameter("b", "Long", false, null)),
                t("add").parameters());
        List<TetherParameter> greet = t("greet").parameters();
        assertEquals(2, greet.size());
        assertEquals(new TetherParameter("name", "String", false, null), greet.get(0));
        assertEquals(new TetherParameter("greeting", "String", true, "hello"), greet.get(1));
        assertTrue(t("call").parameters().isEmpty(), "a variadic function without a signature");
    }

    @Test
    void typeReflectionGivesJavaNamesAndTypes() {
        TetherType pair = Tether.type("testing.Pair");
        TetherType.Method swap = pair.method("swap");
        assertEquals("swap", swap.javaName());
        assertEquals("Pair swap()", swap.signature());
        assertEquals("Pair", swap.resultType());
        assertTrue(swap.parameters().isEmpty(), "the receiver is left out");
        assertEquals(2, pair.constructorParameters().size());
        assertEquals("Pair", pair.constructorSignature().split(" ")[0]);

        TetherModule m = sample();
        TetherType counter = Tether.type("sample.Counter");
        assertNotNull(m);
        TetherType.Method incrementBy = counter.method("increment_by");
        assertSame(incrementBy, counter.method("incrementBy"), "found by either name");
        assertEquals("incrementBy", incrementBy.javaName());
        assertEquals("Long incrementBy(Long by)", incrementBy.signature());
        assertEquals(List.of(new TetherParameter("by", "Long", true, 1L)), incrementBy.parameters());
        TetherType.Field isEven = counter.field("is_even");
        assertSame(isEven, counter.field("isEven"));
        assertEquals("isEven", isEven.javaName());
        assertEquals("Boolean", isEven.type());
        assertEquals("Long", counter.field("count").type());
        assertEquals(List.of(new TetherParameter("start", "Long", false, null)), counter.constructorParameters());
        assertEquals("Counter Counter(Long start)", counter.constructorSignature());
        assertNull(Tether.type("testing.Aligned").constructorSignature());
    }

    @Test
    void defaultsAreFilledForLeftOutArguments() {
        TetherFunction greet = t("greet");
        assertEquals("hello, Ada", greet.call("Ada"));
        assertEquals("hi, Ada", greet.call("Ada", "hi"));
        assertEquals("hello, Bob", greet.call(new Object[] {"Bob"}), "the array path");
        for (int i = 0; i < 3; i++) {
            assertEquals("hello, Cy", greet.call("Cy"), "again, once the call site has learned");
        }
        TetherInstance c = (TetherInstance) sample().construct("sample.Counter", 3L);
        assertEquals(4L, c.call("increment_by"), "by defaults to 1");
        assertEquals(6L, c.call("incrementBy", 2L), "the Java name calls the same method");
        assertEquals(true, c.get("isEven"));
        assertEquals(true, c.get("is_even"));
    }

    @Test
    void aMissingRequiredArgumentAndTooMany() {
        TetherTypeError none = assertThrows(TetherTypeError.class, () -> t("greet").call());
        assertEquals("testing.greet() missing 1 required argument: 'name'", none.getMessage());
        TetherTypeError many = assertThrows(TetherTypeError.class, () -> t("greet").call("a", "b", "c"));
        assertEquals("testing.greet() takes from 1 to 2 positional arguments but 3 were given", many.getMessage());
        // Without defaults too, a call of another count is bound by the signature.
        TetherTypeError add = assertThrows(TetherTypeError.class, () -> t("add").call(1L));
        assertEquals("testing.add() missing 1 required argument: 'b'", add.getMessage());
    }

    @Test
    void errorsNameTheParameter() {
        TetherTypeError e = assertThrows(TetherTypeError.class, () -> t("greet").call("a", 3L));
        assertEquals("testing.greet() argument 'greeting' must be str, not int", e.getMessage());
        // Java's own encoding failures: a function, a method (receiver left out), a constructor.
        java.math.BigInteger huge = java.math.BigInteger.TWO.pow(70);
        TetherValueError f = assertThrows(TetherValueError.class, () -> t("echo").call(huge));
        assertTrue(f.getMessage().startsWith("testing.echo() argument 'x': int too large"), f.getMessage());
        TetherInstance c = (TetherInstance) sample().construct("sample.Counter", 0L);
        TetherValueError m = assertThrows(TetherValueError.class, () -> c.call("incrementBy", huge));
        assertTrue(m.getMessage().startsWith("sample.Counter.increment_by() argument 'by': int too large"), m.getMessage());
        TetherValueError k = assertThrows(TetherValueError.class, () -> sample().construct("sample.Counter", huge));
        assertTrue(k.getMessage().startsWith("sample.Counter() argument 'start': int too large"), k.getMessage());
        // A host value reaching a typed parameter: the native conversion names it and its class.
        TetherTypeError h = assertThrows(TetherTypeError.class, () -> c.call("incrementBy", new Object()));
        assertEquals("sample.Counter.increment_by() argument 'by' must be int, not java.lang.Object", h.getMessage());
        // A native decoding failure on the one-argument path (a List nested too deep).
        Object deep = List.of();
        for (int i = 0; i < Tether.MAX_NESTING_DEPTH + 1; i++) {
            deep = List.of(deep);
        }
        Object tooDeep = deep;
        TetherValueError nested = assertThrows(TetherValueError.class, () -> t("echo").call(tooDeep));
        assertTrue(nested.getMessage().startsWith("testing.echo() argument 'x': "), nested.getMessage());
        TetherTypeError arity = assertThrows(TetherTypeError.class, () -> c.call("increment_by", 1L, 2L));
        // (The core words the range "from 0 to 1 positional argument"; Python says "arguments".)
        assertTrue(arity.getMessage().matches("sample\\.Counter\\.increment_by\\(\\) takes from 0 to 1 positional arguments but 2 were given"),
                arity.getMessage());
    }
}
