package dev.tether.ffi;

/** Information only (no assertions): ns/op of {@code echo.call(p)} in a warmed loop. */
public final class EchoBenchMain {
    private EchoBenchMain() {}

    public static void main(String[] args) {
        TetherFunction echo = Tether.getGlobalFunc("testing.echo");
        TetherFunction add3 = Tether.getGlobalFunc("testing.add3");
        Object p = Tether.getGlobalFunc("testing.make_pair").call(1L, 2L);
        TetherObject pair = (TetherObject) p;
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 5_000_000;
        for (int round = 0; round < 5; round++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                if (echo.call(p) != p) {
                    throw new AssertionError("identity");
                }
            }
            long t1 = System.nanoTime();
            for (int i = 0; i < n / 5; i++) {
                pair.get("first");
            }
            long t2 = System.nanoTime();
            for (int i = 0; i < n / 5; i++) {
                add3.call(1L, 2L, 3L);
            }
            long t3 = System.nanoTime();
            System.out.printf("round %d: echo.call(p) %.1f ns/op, p.get(\"first\") %.1f ns/op, add3.call(1,2,3) %.1f ns/op%n",
                    round, (t1 - t0) / (double) n, (t2 - t1) / (n / 5.0), (t3 - t2) / (n / 5.0));
        }
    }
}
