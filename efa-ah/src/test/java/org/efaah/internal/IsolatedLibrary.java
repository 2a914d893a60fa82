package org.efaah.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.InputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.Set;

/**
 * A class loader that loads the library (and the named test classes) itself, from the build's
 * class directories, as an application server or a plugin host loads one copy per deployment;
 * everything else (SLF4J, the JDK) comes from the test's loader.
 */
final class IsolatedLibrary extends URLClassLoader {
    private final Set<String> prefixes;

    /** Loads classes whose names start with one of {@code prefixes} itself. */
    IsolatedLibrary(String name, Set<String> prefixes) {
        super(name, new URL[] {location(org.efaah.cache.AddressHandleCache.class), location(IsolatedLibrary.class)},
                IsolatedLibrary.class.getClassLoader());
        this.prefixes = prefixes;
    }

    private static URL location(Class<?> c) {
        return c.getProtectionDomain().getCodeSource().getLocation();
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        if (prefixes.stream().noneMatch(name::startsWith)) {
            return super.loadClass(name, resolve);
        }
        synchronized (getClassLoadingLock(name)) {
            Class<?> c = findLoadedClass(name);
            if (c == null) {
                String path = name.replace('.', '/') + ".class";
                try (InputStream in = getResourceAsStream(path)) {
                    if (in == null) {
                        throw new ClassNotFoundException(name);
                    }
                    c = findClass(name);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
            if (resolve) {
                resolveClass(c);
            }
            return c;
        }
    }
}
