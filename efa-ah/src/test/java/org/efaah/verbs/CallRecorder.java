package org.efaah.verbs;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Wraps a provider and records every SPI call that reaches it, by method name, so that a test can
 * assert that nothing reached the provider after some point (a freed handle would be used there).
 */
public final class CallRecorder {
    private final VerbsProvider provider;
    private final List<String> calls = new CopyOnWriteArrayList<>();

    public CallRecorder(VerbsProvider real) {
        InvocationHandler handler = (proxy, method, args) -> {
            calls.add(method.getName());
            try {
                return method.invoke(real, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        this.provider = (VerbsProvider) Proxy.newProxyInstance(VerbsProvider.class.getClassLoader(),
                new Class<?>[] {VerbsProvider.class}, handler);
    }

    /** The recording provider to open devices with. */
    public VerbsProvider provider() {
        return provider;
    }

    /** The calls recorded since the last {@link #clear()}, in order. */
    public List<String> calls() {
        return List.copyOf(calls);
    }

    public void clear() {
        calls.clear();
    }
}
