package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Gid;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue 11 case 9: on EFA the key is the dgid alone, so the AH must be made from the key alone;
 * what reaches {@code ibv_create_ah} never depends on which requester came first.
 */
@ExtendWith(CacheInvariants.class)
class EfaCanonicalAttributesTest {
    private static final Gid PEER = Gid.parse("fe80::7");

    private static AddressHandleAttributes fancy(int n) {
        return AddressHandleAttributes.builder().dgid(PEER).sl(n).trafficClass(8 * n).flowLabel(1000 + n)
                .staticRate(n).hopLimit(10 + n).build();
    }

    @Test
    void theFirstRequestersOtherFieldsNeverReachTheDevice() {
        for (List<AddressHandleAttributes> order : List.of(List.of(fancy(3), fancy(5)), List.of(fancy(5), fancy(3)),
                List.of(AddressHandleAttributes.forGid(PEER), fancy(2)))) {
            try (FaultyFixture f = new FaultyFixture()) {
                try (AddressHandle a = f.cache.acquire(f.pd, order.get(0));
                     AddressHandle b = f.cache.acquire(f.pd, order.get(1))) {
                    // EFA's own GID is at index 0, whatever the requester named.
                    AddressHandleAttributes canonical = AddressHandleAttributes.forGid(PEER).toBuilder().sgidIndex(0).build();
                    assertEquals(List.of(canonical), f.provider.created, "one create, from the key alone, for " + order);
                    assertEquals(canonical, a.attributes());
                    assertEquals(canonical, b.attributes());
                }
            }
        }
    }
}
