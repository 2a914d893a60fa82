package org.efaah.verbs;

import org.efaah.verbs.spi.VerbsProvider;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A verb added to the SPI with a default body is not forwarded unless the forwarding provider
 * overrides it: the test providers built on it would then answer EOPNOTSUPP for a verb the
 * real provider has (as moveQpToError did in the VM). Every SPI method must be forwarded.
 */
class ForwardingVerbsProviderTest {
    @Test
    void everyVerbOfTheSpiIsForwarded() {
        List<String> missing = new ArrayList<>();
        for (Method m : VerbsProvider.class.getMethods()) {
            if (Modifier.isStatic(m.getModifiers())) {
                continue;
            }
            try {
                ForwardingVerbsProvider.class.getDeclaredMethod(m.getName(), m.getParameterTypes());
            } catch (NoSuchMethodException e) {
                missing.add(m.getName());
            }
        }
        assertEquals(List.of(), missing, "VerbsProvider methods ForwardingVerbsProvider does not forward");
    }
}
