import java.util.SplittableRandom;

/*
 * The load of a parallel build, for scripts/test's timing step: a JVM that allocates without
 * pause and keeps a live set that churns, so its collector runs all the time, over as many
 * threads as asked, and ends by itself after the seconds it is given (the step also kills it).
 * Launched as a source file (java BusyJvm.java SECONDS THREADS LIVE_MB), it needs nothing built.
 * Only this machine's CPUs and memory: no file, no network.
 */
public final class BusyJvm {
    public static void main(String[] args) throws InterruptedException {
        long seconds = Long.parseLong(args[0]);
        int threads = Integer.parseInt(args[1]);
        int liveMb = Integer.parseInt(args[2]);
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        // 16 KiB average objects, liveMb of them alive at once: older ones die at random, so
        // the old generation fills and is collected too, not only the young one.
        byte[][] live = new byte[Math.max(1, liveMb * 64)][];
        for (int t = 0; t < threads; t++) {
            SplittableRandom random = new SplittableRandom(t);
            Thread w = new Thread(() -> {
                long sum = 0;
                while (System.nanoTime() < end) {
                    for (int i = 0; i < 1_000; i++) {
                        byte[] b = new byte[random.nextInt(32 * 1024)];
                        sum += b.length;
                        live[random.nextInt(live.length)] = b;
                    }
                }
                if (sum == 42) {
                    System.out.println(sum);
                }
            });
            w.setDaemon(true);
            w.start();
        }
        Thread.sleep(seconds * 1_000);
        System.exit(0);
    }
}
