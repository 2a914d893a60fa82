package org.efaah.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.RecordComponent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Stream;
import org.efaah.cache.AddressHandleCache;
import org.efaah.verbs.Gid;
import org.junit.jupiter.api.Test;

/**
 * Issue 34: the records' written-out equals, hashCode and toString (NoObjectMethodsTest) mean what
 * the generated ones meant. For every record of the library that its canonical constructor lets be
 * made from plain values: toString is {@code Name[a=1, b=2]}, hashCode is the generated fold
 * ({@code 31 * h + hash(component)}, from 0), and equals compares every component, arrays by
 * reference.
 */
class RecordMethodsTest {
    /* Records whose toString was their own before issue 34; their equals and hashCode are checked. */
    private static final Set<String> OWN_TO_STRING = Set.of("org.efaah.ud.EndpointAddress", "org.efaah.ud.SendFailure",
            "org.efaah.health.HealthReport", "org.efaah.health.HealthCheck");

    @Test
    void writtenOutMethodsMeanWhatTheGeneratedOnesMeant() throws Exception {
        Path classes = Path.of(AddressHandleCache.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> checked = new ArrayList<>();
        try (Stream<Path> files = Files.walk(classes)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".class")).toList()) {
                String name = classes.relativize(f).toString().replace('/', '.').replaceAll("\\.class$", "");
                Class<?> c = Class.forName(name, false, getClass().getClassLoader());
                if (c.isRecord() && check(c)) {
                    checked.add(c.getSimpleName());
                }
            }
        }
        assertTrue(checked.size() >= 30, "too few records made: " + checked);
    }

    /*
     * MockConfig's constructor refuses the sampled values (its ranges), so the sweep above skips it;
     * built by its builder, every component must reach toString, equals and hashCode (two fields
     * added beside the written-out methods once reached none of them).
     */
    @Test
    void mockConfigsMethodsSeeEveryComponent() {
        org.efaah.verbs.mock.MockConfig base = org.efaah.verbs.mock.MockConfig.builder().build();
        String text = base.toString();
        for (RecordComponent c : org.efaah.verbs.mock.MockConfig.class.getRecordComponents()) {
            assertTrue(text.contains(", " + c.getName() + "=") || text.contains("[" + c.getName() + "="),
                    "MockConfig's toString lacks " + c.getName() + ": " + text);
        }
        org.efaah.verbs.mock.MockConfig deeper = org.efaah.verbs.mock.MockConfig.builder().efaMaxDepths(512, 256).build();
        assertNotEquals(base, deeper);
        assertNotEquals(base.hashCode(), deeper.hashCode());
    }

    /** Checks {@code c} if it can be made from plain values; false if its constructor refuses them. */
    private static boolean check(Class<?> c) throws Exception {
        RecordComponent[] rc = c.getRecordComponents();
        Class<?>[] types = Stream.of(rc).map(RecordComponent::getType).toArray(Class<?>[]::new);
        Constructor<?> canonical = c.getDeclaredConstructor(types);
        canonical.setAccessible(true);
        Object[] args = new Object[rc.length];
        for (int i = 0; i < rc.length; i++) {
            args[i] = sample(types[i], i, 0);
        }
        Object a = make(canonical, args);
        if (a == null) {
            return false;
        }
        Object[] values = new Object[rc.length];
        StringBuilder text = new StringBuilder(c.getSimpleName()).append('[');
        int hash = 0;
        for (int i = 0; i < rc.length; i++) {
            var accessor = rc[i].getAccessor();
            accessor.setAccessible(true);
            values[i] = accessor.invoke(a);
            text.append(i == 0 ? "" : ", ").append(rc[i].getName()).append('=').append(String.valueOf(values[i]));
            hash = 31 * hash + Objects.hashCode(values[i]); // a primitive's box hashes as its hashCode(x)
        }
        text.append(']');
        String what = c.getName();
        if (!OWN_TO_STRING.contains(what)) {
            assertEquals(text.toString(), a.toString(), what + ".toString()");
        }
        assertEquals(hash, a.hashCode(), what + ".hashCode()");
        Object same = make(canonical, values.clone());
        assertEquals(a, same, what + ": equal components");
        assertEquals(a.hashCode(), same.hashCode(), what + ": equal hashes");
        assertNotEquals(a, null, what);
        assertNotEquals(a, "other", what);
        for (int i = 0; i < rc.length; i++) {
            Object[] other = values.clone();
            other[i] = types[i].isArray() ? java.lang.reflect.Array.newInstance(types[i].getComponentType(),
                    java.lang.reflect.Array.getLength(values[i])) : sample(types[i], i, 1);
            if (types[i].isArray()) {
                System.arraycopy(values[i], 0, other[i], 0, java.lang.reflect.Array.getLength(values[i]));
            }
            Object b = make(canonical, other);
            if (b != null && !Objects.equals(other[i], values[i])) {
                assertNotEquals(a, b, what + ": " + rc[i].getName() + " differs"
                        + (types[i].isArray() ? " (an equal array, another reference)" : ""));
            }
        }
        return true;
    }

    private static Object make(Constructor<?> canonical, Object[] args) throws Exception {
        try {
            return canonical.newInstance(args);
        } catch (InvocationTargetException e) {
            return null; // the constructor refuses these values
        }
    }

    /** A plain value of {@code type} (null for the library's other types), distinct per component index and per {@code variant}. */
    private static Object sample(Class<?> type, int index, int variant) {
        int v = 2 + index + 100 * variant;
        if (type == int.class) {
            return v;
        } else if (type == long.class) {
            return (long) v << 33 | v;
        } else if (type == double.class) {
            return v / 1000.0;
        } else if (type == float.class) {
            return v / 1000.0f;
        } else if (type == boolean.class) {
            return variant == 1;
        } else if (type == short.class) {
            return (short) v;
        } else if (type == byte.class) {
            return (byte) v;
        } else if (type == char.class) {
            return (char) ('a' + v % 26);
        } else if (type == String.class) {
            return "s" + v;
        } else if (type == Gid.class) {
            return Gid.parse("fe80::" + Integer.toHexString(v));
        } else if (type == Duration.class) {
            return Duration.ofSeconds(v);
        } else if (type == byte[].class) {
            return new byte[] {(byte) v, 1};
        } else if (type == List.class) {
            return variant == 0 ? List.of() : List.of("x");
        } else if (type.isEnum()) {
            Object[] constants = type.getEnumConstants();
            return constants[(index + variant) % constants.length];
        }
        return null;
    }
}
