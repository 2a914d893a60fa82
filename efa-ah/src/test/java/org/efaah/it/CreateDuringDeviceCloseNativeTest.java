package org.efaah.it;

import org.efaah.cache.CreateDuringDeviceCloseTest;
import org.efaah.fixture.CountingProvider;
import org.efaah.verbs.AddressHandleAttributes;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Issue 33 race 5.3 over the native provider (the EFA double here): CreateDuringDeviceCloseTest's
 * case, the device's AHs counted as the provider's creates less its destroys (a forced close
 * destroys each AH, ibv_destroy_ah, before ibv_close_device).
 */
@Tag("native")
class CreateDuringDeviceCloseNativeTest {

    @Test
    void aCreateFinishingDuringAForcedDeviceCloseFailsAndCountsNothingLive() throws Exception {
        CountingProvider provider = new CountingProvider(NativeDevice.provider());
        CreateDuringDeviceCloseTest.aCreateFinishingDuringAForcedDeviceCloseFailsAndCountsNothingLive(provider,
                d -> AddressHandleAttributes.forGid(NativeDevice.peers(d, 1).get(0)),
                () -> provider.creates.get() - provider.destroys.get());
    }
}
