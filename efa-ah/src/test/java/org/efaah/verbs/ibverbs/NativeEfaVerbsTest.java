package org.efaah.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.efaah.verbs.spi.EfaVerbs;
import org.efaah.verbs.Errno;
import org.efaah.verbs.VerbsException;
import org.junit.jupiter.api.Test;

/** The native EFA extensions where the JNI library is built, with or without a device. */
class NativeEfaVerbsTest {

    @Test
    void srdActivationChecksItsArgumentsBeforeNativeCode() {
        NativeTestSupport.assumeLoaded();
        EfaVerbs efa = new NativeVerbsProvider().efa();
        // Handle 1 would crash the JVM if it reached C: each of these must be refused before.
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> efa.activateSrdQp(1, 1, 7, 8));
        assertEquals("rnr_retry: 8 is out of range; valid 0..7", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> efa.activateSrdQp(1, 1, 7, -2));
        assertThrows(IllegalArgumentException.class, () -> efa.activateSrdQp(1, 0, 7, 3));
        assertThrows(IllegalArgumentException.class, () -> efa.activateSrdQp(1, 256, 7, 3));
        assertThrows(IllegalArgumentException.class, () -> efa.activateSrdQp(1, 1, -1, 3));
        VerbsException zero = assertThrows(VerbsException.class,
                () -> efa.activateSrdQp(0, 1, 7, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT));
        assertEquals(Errno.EINVAL, zero.errno());
        assertEquals("ibv_modify_qp", zero.operation());
    }

    @Test
    void zeroHandlesGiveEinvalNotACrash() {
        NativeTestSupport.assumeLoaded();
        EfaVerbs efa = new NativeVerbsProvider().efa();
        VerbsException e = assertThrows(VerbsException.class, () -> efa.queryDevice(0));
        assertEquals(Errno.EINVAL, e.errno());
        assertEquals(Errno.EINVAL, assertThrows(VerbsException.class, () -> efa.activateSrdQp(0, 1, 7, 3)).errno());
        VerbsException onChannel = assertThrows(VerbsException.class, () -> efa.createCqWithSourceGid(0, 8, 0));
        assertEquals(Errno.EINVAL, onChannel.errno());
        assertEquals("efadv_create_cq", onChannel.operation());
    }

    @Test
    void aBatchOfSendsIsCheckedBeforeNativeCodeAndZeroHandlesGiveEinval() {
        NativeTestSupport.assumeLoaded();
        NativeVerbsProvider provider = new NativeVerbsProvider();
        int[] one = {0};
        long[] id = {1};
        IllegalArgumentException count = assertThrows(IllegalArgumentException.class,
                () -> provider.postSends(1, 1, 1, 1, 1, one, one, id, 2));
        assertTrue(count.getMessage().startsWith("count: 2 is out of range"), count.getMessage());
        assertThrows(IllegalArgumentException.class, () -> provider.postSends(1, 1, 0x1000000, 1, 1, one, one, id, 1));
        VerbsException zero = assertThrows(VerbsException.class, () -> provider.postSends(0, 0, 1, 1, 0, one, one, id, 1));
        assertEquals(Errno.EINVAL, zero.errno());
        assertEquals("ibv_post_send", zero.operation());
    }

    @Test
    void zeroLengthReceiveIsRefusedBeforeNativeCode() {
        NativeTestSupport.assumeLoaded();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new NativeVerbsProvider().postReceive(1, 1, 0, 0, 0));
        assertTrue(e.getMessage().startsWith("length: 0 is out of range; valid 0x1.."), e.getMessage());
    }

    @Test
    void anUnsupportedEfaCallSaysWhichPartIsMissing() {
        assertEquals("libefa.so.1 is not installed (rdma-core's EFA provider)",
                NativeEfaVerbs.whyUnsupported(0, NativeVerbs.EFADV_CQ));
        int olderLibefa = NativeVerbs.EFADV_LOADED | NativeVerbs.EFADV_QUERY | NativeVerbs.EFADV_SRD;
        assertEquals("this libefa.so.1 lacks efadv_create_cq/efadv_cq_from_ibv_cq_ex (EFA_1.2, rdma-core 43 and later)",
                NativeEfaVerbs.whyUnsupported(olderLibefa, NativeVerbs.EFADV_CQ));
        assertEquals("the device is not EFA", NativeEfaVerbs.whyUnsupported(olderLibefa, NativeVerbs.EFADV_SRD));
        assertTrue(NativeEfaVerbs.whyUnsupported(NativeVerbs.EFADV_LOADED, NativeVerbs.EFADV_QUERY)
                .contains("efadv_query_device"));
    }

    @Test
    void thisHostsLibefaFamiliesAreStable() {
        NativeTestSupport.assumeLoaded();
        int families = NativeVerbs.efa_ah_efadv_families();
        assertEquals(families, NativeVerbs.efa_ah_efadv_families());
        assertEquals(NativeVerbs.efa_ah_efadv_available() == 1, (families & NativeVerbs.EFADV_QUERY) != 0);
    }
}
