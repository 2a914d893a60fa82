package org.efaah.it;

import org.efaah.fixture.HeldAsyncChannel;
import org.efaah.verbs.ContextFreedUnderReaderTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Issue 33 race 5.2 over the native provider (the EFA double here, a real device on a host):
 * ContextFreedUnderReaderTest's two cases, the reader's channel being the context's async_fd made
 * non-blocking (efa_ah_async_open), whose free restores its flags with fcntl (efa_ah_async_close)
 * and must come before ibv_close_device closes that fd.
 */
@Tag("native")
class ContextFreedUnderReaderNativeTest {

    @Test
    void anInterruptedCloseLeavesTheContextToTheReaderStillFreeingItsChannel() throws Exception {
        ContextFreedUnderReaderTest.anInterruptedCloseLeavesTheContextToTheReader(
                new HeldAsyncChannel(NativeDevice.provider()));
    }

    @Test
    void aCloseWhoseReaderStopFailedLeavesTheContextToTheReader() throws Exception {
        ContextFreedUnderReaderTest.aCloseWhoseStopFailedLeavesTheContextToTheReader(
                new HeldAsyncChannel(NativeDevice.provider()));
    }
}
