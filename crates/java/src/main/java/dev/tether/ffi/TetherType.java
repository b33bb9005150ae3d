package dev.tether.ffi;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/** Reflection for one registered type, read from the native type registry (cached). */
public final class TetherType {
    /** A reflected field. */
    public static final class Field {
        private final String name;
        private final boolean settable;
        private final String typeHint;
        private final String doc;
        private final String javaName;
        private final String type;

        Field(String name, boolean settable, String typeHint, String doc, String javaName, String type) {
            this.name = name;
            this.settable = settable;
            this.typeHint = typeHint;
            this.doc = doc;
            this.javaName = javaName;
            this.type = type;
        }

        /** The registry's name ({@code is_even}). */
        public String name() {
            return name;
        }

        /** The name as Java spells it ({@code isEven}); {@code get} and {@code set} take either. */
        public String javaName() {
            return javaName;
        }

        /** The field's type as Java spells it ({@code "Long"}, {@code "Object"} when unknown). */
        public String type() {
            return type;
        }

        public boolean settable() {
            return settable;
        }

        public String typeHint() {
            return typeHint;
        }

        public String doc() {
            return doc;
        }

        @Override
        public String toString() {
            return name + (typeHint.isEmpty() ? "" : ": " + typeHint) + (settable ? "" : " (read-only)");
        }
    }

    /** A reflected method. */
    public static final class Method {
        private final String name;
        private final boolean isStatic;
        private final String doc;
        private final String javaName;
        private final String signature;
        private final String resultType;
        private final List<TetherParameter> parameters;

        Method(Object[] m) {
            this.name = (String) m[0];
            this.isStatic = (Boolean) m[1];
            this.doc = (String) m[2];
            this.javaName = (String) m[3];
            this.signature = (String) m[4];
            this.resultType = (String) m[5];
            this.parameters = TetherParameter.listOf((Object[]) m[6]);
        }

        /** The registry's name ({@code increment_by}). */
        public String name() {
            return name;
        }

        /** The name as Java spells it ({@code incrementBy}); {@code call} takes either. */
        public String javaName() {
            return javaName;
        }

        /** The declaration in Java, the receiver left out: {@code Long incrementBy(Long by)}. */
        public String signature() {
            return signature;
        }

        /** The result type as Java spells it. */
        public String resultType() {
            return resultType;
        }

        /** The parameters a caller writes (the receiver left out). */
        public List<TetherParameter> parameters() {
            return parameters;
        }

        public boolean isStatic() {
            return isStatic;
        }

        public String doc() {
            return doc;
        }

        @Override
        public String toString() {
            return (isStatic ? "static " : "") + signature;
        }
    }

    private static final ConcurrentHashMap<Integer, TetherType> CACHE = new ConcurrentHashMap<>();

    /**
     * {@link #CACHE} by type index, for the field-read path (no boxing, no hashing). Grown by
     * copy; a reader that sees an old or a null entry falls back to {@link #CACHE}.
     */
    private static volatile TetherType[] byIndex = new TetherType[0];

    /** Field name to its native getter Function (0: no such field), filled on first read. */
    private final ConcurrentHashMap<String, Long> getters = new ConcurrentHashMap<>();

    /** The last field looked up and its getter (one immutable pair, so reads are consistent). */
    private static final class LastGetter {
        final String field;
        final long getter;

        LastGetter(String field, long getter) {
            this.field = field;
            this.getter = getter;
        }
    }

    private LastGetter lastGetter = new LastGetter(null, 0);

    private final int index;
    private final String key;
    private final String doc;
    private final List<Field> fields;
    private final List<Method> methods;
    private final boolean constructible;
    private final String constructorSignature;
    private final List<TetherParameter> constructorParameters;
    /** The constructor Function's handle (the registry never releases it), 0 when none. */
    private final long constructorHandle;

    private TetherType(int index) {
        this.index = index;
        this.key = Native.typeKey(index);
        this.doc = Native.typeDoc(index);
        List<Field> fs = new ArrayList<>();
        for (Object o : Native.typeFields(index)) {
            Object[] f = (Object[]) o;
            fs.add(new Field((String) f[0], (Boolean) f[1], (String) f[2], (String) f[3], (String) f[4], (String) f[5]));
        }
        this.fields = Collections.unmodifiableList(fs);
        List<Method> ms = new ArrayList<>();
        for (Object o : Native.typeMethods(index)) {
            ms.add(new Method((Object[]) o));
        }
        this.methods = Collections.unmodifiableList(ms);
        this.constructible = Native.typeHasConstructor(index);
        Object[] ctor = constructible ? Native.typeConstructor(index) : null;
        this.constructorSignature = ctor == null ? null : (String) ctor[0];
        this.constructorParameters = ctor == null ? List.of() : TetherParameter.listOf((Object[]) ctor[2]);
        this.constructorHandle = constructible ? Native.constructorHandle(index) : 0;
    }

    static TetherType of(int index) {
        TetherType[] table = byIndex;
        if (index >= 0 && index < table.length) {
            TetherType t = table[index];
            if (t != null) {
                return t;
            }
        }
        return slowOf(index);
    }

    private static TetherType slowOf(int index) {
        TetherType t = CACHE.computeIfAbsent(index, TetherType::new);
        if (index >= 0 && index < 1 << 16) {
            synchronized (CACHE) {
                TetherType[] table = byIndex;
                if (index >= table.length) {
                    table = java.util.Arrays.copyOf(table, Math.max(index + 1, table.length * 2));
                } else {
                    table = table.clone();
                }
                table[index] = t;
                byIndex = table;
            }
        }
        return t;
    }

    /** The native getter of {@code field}, or 0 when the type has no such field. */
    long getter(String field) {
        LastGetter last = lastGetter;
        if (last.field == field) {
            return last.getter; // the same String (a literal at the call site): no hashing
        }
        Long g = getters.get(field);
        if (g == null) {
            g = getters.computeIfAbsent(field, name -> Native.fieldGetter(index, name));
        }
        lastGetter = new LastGetter(field, g);
        return g;
    }

    public String key() {
        return key;
    }

    public String doc() {
        return doc;
    }

    public List<Field> fields() {
        return fields;
    }

    public List<Method> methods() {
        return methods;
    }

    /** The field by its registry name or its Java name, or null. */
    public Field field(String name) {
        return fields.stream().filter(f -> f.name.equals(name)).findFirst()
                .or(() -> fields.stream().filter(f -> f.javaName.equals(name)).findFirst()).orElse(null);
    }

    /** The method by its registry name or its Java name, or null. */
    public Method method(String name) {
        return methods.stream().filter(m -> m.name.equals(name)).findFirst()
                .or(() -> methods.stream().filter(m -> m.javaName.equals(name)).findFirst()).orElse(null);
    }

    /**
     * The native Function that a call of method {@code name} (its registry or Java name) on
     * this type's objects runs, found as {@link TetherObject#call} finds it, to resolve once
     * and call directly (what generated bindings do): an instance method's Function takes the
     * object first ({@code f.call(obj, args...)}), a static one only the arguments. Results,
     * identity and error messages are those of {@link TetherObject#call}.
     *
     * @throws TetherAttributeError if the type has no method by that name
     */
    public TetherFunction methodFunction(String name) {
        return (TetherFunction) Native.methodFunction(index, name);
    }

    public boolean hasConstructor() {
        return constructible;
    }

    /** The constructor's declaration in Java ({@code Counter Counter(Long start)}), or null when there is none. */
    public String constructorSignature() {
        return constructorSignature;
    }

    /** The constructor's parameters (empty when there is no constructor). */
    public List<TetherParameter> constructorParameters() {
        return constructorParameters;
    }

    /**
     * Construct an instance with the type's constructor. 0-3 arguments take the array-free
     * path of {@link #construct(Object, Object)}.
     */
    public Object construct(Object... args) {
        if (args != null) {
            switch (args.length) {
                case 0:
                    return construct();
                case 1:
                    return construct(args[0]);
                case 2:
                    return construct(args[0], args[1]);
                case 3:
                    return construct(args[0], args[1], args[2]);
                default:
                    break;
            }
        }
        return Tether.construct(key, args);
    }

    /** Construct with no arguments (see {@link #construct(Object, Object)}). */
    public Object construct() {
        if (!direct()) {
            return Tether.construct(key);
        }
        TetherInstance w = new TetherInstance(index);
        return bound(Native.construct0(constructorHandle, index, w), w);
    }

    /** Construct with one argument (see {@link #construct(Object, Object)}). */
    public Object construct(Object a) {
        int ka = Marshal.fastKind(a);
        if (ka == Marshal.SLOW || !direct()) {
            return Tether.construct(key, new Object[] {a});
        }
        try {
            long ba = Marshal.fastBits(a, ka);
            TetherInstance w = new TetherInstance(index);
            return bound(Native.construct1(constructorHandle, index, w, Marshal.fastWord(a, ka), ba,
                    Marshal.fastRef(a, ka)), w);
        } finally {
            java.lang.ref.Reference.reachabilityFence(a);
        }
    }

    /**
     * Construct with two arguments. Wrappers, {@code Long}s, {@code Integer}s and null pass as
     * plain arguments (no arrays), and the new object's wrapper is made here before the call
     * (for a type without a generated class), so native code ties it without calling back
     * into Java; other arguments take {@link #construct(Object...)}'s general path. The
     * results and errors are the same either way.
     */
    public Object construct(Object a, Object b) {
        int ka = Marshal.fastKind(a);
        int kb = Marshal.fastKind(b);
        if (ka == Marshal.SLOW || kb == Marshal.SLOW || !direct()) {
            return Tether.construct(key, new Object[] {a, b});
        }
        try {
            long ba = Marshal.fastBits(a, ka);
            long bb = Marshal.fastBits(b, kb);
            TetherInstance w = new TetherInstance(index);
            return bound(Native.construct2(constructorHandle, index, w, Marshal.fastWord(a, ka), ba,
                    Marshal.fastRef(a, ka), Marshal.fastWord(b, kb), bb, Marshal.fastRef(b, kb)), w);
        } finally {
            java.lang.ref.Reference.reachabilityFence(a);
            java.lang.ref.Reference.reachabilityFence(b);
        }
    }

    /** Construct with three arguments (see {@link #construct(Object, Object)}). */
    public Object construct(Object a, Object b, Object c) {
        int ka = Marshal.fastKind(a);
        int kb = Marshal.fastKind(b);
        int kc = Marshal.fastKind(c);
        if (ka == Marshal.SLOW || kb == Marshal.SLOW || kc == Marshal.SLOW || !direct()) {
            return Tether.construct(key, new Object[] {a, b, c});
        }
        try {
            long ba = Marshal.fastBits(a, ka);
            long bb = Marshal.fastBits(b, kb);
            long bc = Marshal.fastBits(c, kc);
            TetherInstance w = new TetherInstance(index);
            return bound(Native.construct3(constructorHandle, index, w, Marshal.fastWord(a, ka), ba,
                    Marshal.fastRef(a, ka), Marshal.fastWord(b, kb), bb, Marshal.fastRef(b, kb),
                    Marshal.fastWord(c, kc), bc, Marshal.fastRef(c, kc)), w);
        } finally {
            java.lang.ref.Reference.reachabilityFence(a);
            java.lang.ref.Reference.reachabilityFence(b);
            java.lang.ref.Reference.reachabilityFence(c);
        }
    }

    /**
     * May a construct make the wrapper itself? The type has a constructor and its objects'
     * wrappers are {@code TetherInstance}s (no generated class registered; builtin types have
     * classes of their own).
     */
    private boolean direct() {
        return constructorHandle != 0 && Wrappers.registered(index) == null && index != Wrappers.FUNCTION
                && index != Wrappers.ARRAY && index != Wrappers.MAP && index != Wrappers.MODULE;
    }

    /** A direct construct's result: when it is {@code w}, the new object's wrapper, register its Cleaner. */
    private static Object bound(Object made, TetherInstance w) {
        if (made == w) {
            w.bind();
        }
        return made;
    }

    int index() {
        return index;
    }

    @Override
    public String toString() {
        return "TetherType(" + key + ", fields=" + fields + ", methods=" + methods + ")";
    }
}
