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
}
