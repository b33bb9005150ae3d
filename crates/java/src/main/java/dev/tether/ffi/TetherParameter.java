package dev.tether.ffi;

/**
 * One parameter of a native function, as Java spells it (the core's {@code language_name} and
 * {@code render_type}): {@code name} ({@code arg<i>} when the signature has none), its
 * {@code type} ({@code "Long"}, {@code "String"}, {@code "Pair"}, {@code "Object"}), and its
 * default: a call that leaves a trailing parameter out gets {@code defaultValue} (a plain
 * value: null, Long, Double, Boolean, String or byte[]) when {@code hasDefault}.
 */
public record TetherParameter(String name, String type, boolean hasDefault, Object defaultValue) {
    /** The parameters of a native reflection record array ({@code Native.functionParameters}). */
    static java.util.List<TetherParameter> listOf(Object[] records) {
        java.util.List<TetherParameter> out = new java.util.ArrayList<>(records.length);
        for (Object o : records) {
            Object[] p = (Object[]) o;
            out.add(new TetherParameter((String) p[0], (String) p[1], (Boolean) p[2], p[3]));
        }
        return java.util.Collections.unmodifiableList(out);
    }

    @Override
    public String toString() {
        return type + " " + name + (hasDefault ? " = " + (defaultValue instanceof String ? "\"" + defaultValue + "\"" : String.valueOf(defaultValue)) : "");
    }
}
