package org.efaah.verbs.mock;

/**
 * A snapshot of what a {@link MockVerbsProvider} has done, over all its devices.
 *
 * @param createCalls       {@code ibv_create_ah} calls received, whatever their outcome
 * @param destroyCalls      {@code ibv_destroy_ah} calls received, whatever their outcome
 * @param hardwareCreates   AHs the device actually made (a kernel-cached duplicate is not one)
 * @param hardwareDestroys  AHs the device actually freed
 * @param liveAhs           hardware AHs that exist now
 * @param peakLiveAhs       the most hardware AHs that existed at once
 * @param duplicatesRefused creates refused because the (PD, GID) already had an AH (strict devices)
 * @param duplicatesCreated second hardware AHs made for a (PD, GID) that already had one (legacy devices)
 * @param kernelCacheHits   creates answered by the kernel's AH cache with an existing AHN
 * @param injectedFailures  creates and destroys failed on purpose (fault injection)
 * @param userAhs           {@code struct ibv_ah} objects handed out and not yet destroyed
 */
public record MockCounters(long createCalls, long destroyCalls, long hardwareCreates, long hardwareDestroys,
                           long liveAhs, long peakLiveAhs, long duplicatesRefused, long duplicatesCreated, long kernelCacheHits,
                          
                           long injectedFailures, long userAhs) {
    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning and format as the generated ones.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof MockCounters that && that.createCalls == createCalls
                && that.destroyCalls == destroyCalls && that.hardwareCreates == hardwareCreates
                && that.hardwareDestroys == hardwareDestroys && that.liveAhs == liveAhs
                && that.peakLiveAhs == peakLiveAhs && that.duplicatesRefused == duplicatesRefused
                && that.duplicatesCreated == duplicatesCreated && that.kernelCacheHits == kernelCacheHits
                && that.injectedFailures == injectedFailures && that.userAhs == userAhs;
    }

    @Override
    public int hashCode() {
        int h = Long.hashCode(createCalls);
        h = 31 * h + Long.hashCode(destroyCalls);
        h = 31 * h + Long.hashCode(hardwareCreates);
        h = 31 * h + Long.hashCode(hardwareDestroys);
        h = 31 * h + Long.hashCode(liveAhs);
        h = 31 * h + Long.hashCode(peakLiveAhs);
        h = 31 * h + Long.hashCode(duplicatesRefused);
        h = 31 * h + Long.hashCode(duplicatesCreated);
        h = 31 * h + Long.hashCode(kernelCacheHits);
        h = 31 * h + Long.hashCode(injectedFailures);
        h = 31 * h + Long.hashCode(userAhs);
        return h;
    }

    @Override
    public String toString() {
        return new StringBuilder("MockCounters[createCalls=").append(createCalls)
                .append(", destroyCalls=").append(destroyCalls).append(", hardwareCreates=").append(hardwareCreates)
                .append(", hardwareDestroys=").append(hardwareDestroys).append(", liveAhs=").append(liveAhs)
                .append(", peakLiveAhs=").append(peakLiveAhs)
                .append(", duplicatesRefused=").append(duplicatesRefused)
                .append(", duplicatesCreated=").append(duplicatesCreated)
                .append(", kernelCacheHits=").append(kernelCacheHits)
                .append(", injectedFailures=").append(injectedFailures).append(", userAhs=").append(userAhs)
                .append(']').toString();
    }
}
