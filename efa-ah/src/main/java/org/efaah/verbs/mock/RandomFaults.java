package org.efaah.verbs.mock;

import java.util.List;
import java.util.Objects;
import org.efaah.verbs.Errno;

/**
 * Per-call random faults for a {@link MockVerbsProvider}, set at run time with
 * {@link MockVerbsProvider#injectRandomFaults}: each create (after its latency) fails with
 * probability {@code createProbability} and an errno drawn uniformly from {@code createErrnos};
 * each destroy fails with probability {@code destroyProbability} and an errno from
 * {@code destroyErrnos}, the AH staying allocated as in rdma-core. Unlike
 * {@link MockVerbsProvider#failNextCreates}, whose count is shared by whichever threads come
 * next, every call draws its own fault, so many threads can fail with different errnos at once.
 *
 * @param createProbability  chance 0..1 that a create fails
 * @param createErrnos       errnos a failing create reports; not empty when createProbability &gt; 0
 * @param destroyProbability chance 0..1 that a destroy fails
 * @param destroyErrnos      errnos a failing destroy reports; not empty when destroyProbability &gt; 0
 * @param seed               seed of the draws: the sequence of outcomes is reproducible, not
 *                           which thread gets which
 */
public record RandomFaults(double createProbability, List<Errno> createErrnos, double destroyProbability,
                           List<Errno> destroyErrnos, long seed) {

    /** No random faults. */
    public static final RandomFaults NONE = new RandomFaults(0, List.of(), 0, List.of(), 0);

    /**
     * Checks the probabilities and copies the lists.
     *
     * @param createProbability  0..1
     * @param createErrnos       copied; not empty when {@code createProbability} &gt; 0
     * @param destroyProbability 0..1
     * @param destroyErrnos      copied; not empty when {@code destroyProbability} &gt; 0
     * @param seed               any value
     * @throws IllegalArgumentException if a probability is outside 0..1 (or NaN), or is above 0 with
     *                                  no errnos to draw from
     * @throws NullPointerException     if a list is null
     */
    public RandomFaults {
        createErrnos = List.copyOf(Objects.requireNonNull(createErrnos, "createErrnos"));
        destroyErrnos = List.copyOf(Objects.requireNonNull(destroyErrnos, "destroyErrnos"));
        checkProbability("createProbability", createProbability, createErrnos);
        checkProbability("destroyProbability", destroyProbability, destroyErrnos);
    }

    private static void checkProbability(String field, double p, List<Errno> errnos) {
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException(field + ": " + p + " is out of range; valid 0..1");
        }
        if (p > 0 && errnos.isEmpty()) {
            throw new IllegalArgumentException(field + ": " + p + " needs at least one errno to fail with");
        }
    }

    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning and format as the generated ones.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof RandomFaults that
                && Double.compare(that.createProbability, createProbability) == 0
                && Objects.equals(that.createErrnos, createErrnos)
                && Double.compare(that.destroyProbability, destroyProbability) == 0
                && Objects.equals(that.destroyErrnos, destroyErrnos) && that.seed == seed;
    }

    @Override
    public int hashCode() {
        int h = Double.hashCode(createProbability);
        h = 31 * h + Objects.hashCode(createErrnos);
        h = 31 * h + Double.hashCode(destroyProbability);
        h = 31 * h + Objects.hashCode(destroyErrnos);
        h = 31 * h + Long.hashCode(seed);
        return h;
    }

    @Override
    public String toString() {
        return new StringBuilder("RandomFaults[createProbability=").append(createProbability)
                .append(", createErrnos=").append(createErrnos)
                .append(", destroyProbability=").append(destroyProbability)
                .append(", destroyErrnos=").append(destroyErrnos).append(", seed=").append(seed)
                .append(']').toString();
    }
}
