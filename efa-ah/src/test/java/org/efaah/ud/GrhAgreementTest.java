package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Gid;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 11 case 6, GRH part: the source the endpoint reports and the reply AH the mock's
 * ibv_init_ah_from_wc builds come from one decision ({@link org.efaah.verbs.Grh}), so they agree.
 */
class GrhAgreementTest {

    @Test
    void twentyBytesOf0x60ThenAValidIpv4HeaderGiveTheSameSenderForSourceAndReply() {
        MockVerbsProvider roce = new MockVerbsProvider(MockConfig.builder().efa(false).deviceCount(1).gidTableLength(4)
                .gids(List.of(Gid.parse("fe80::1"), Gid.parse("::ffff:10.0.0.1"))).build());
        try (Device d = Device.openFirst(roce);
             ProtectionDomain pd = d.allocatePd();
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build();
             UdEndpoint e = UdEndpoint.open(pd, cache, UdEndpoint.Options.defaults().withSgidIndex(1))) {
            Datagram dg = TestDatagrams.withGrh(TestDatagrams.ipv6NibbleThenIpv4(new byte[] {10, 0, 0, 5},
                    new byte[] {10, 0, 0, 1}), 0x123);
            assertEquals(Gid.parse("::ffff:10.0.0.5"), dg.sourceGid());
            AddressHandleAttributes reply = e.replyAttributes(dg);
            assertEquals(Gid.parse("::ffff:10.0.0.5"), reply.dgid());
            assertEquals(1, reply.sgidIndex(), "from the local GID the IPv4 header was addressed to");
        }
    }
}
