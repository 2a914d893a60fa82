package org.efaah.verbs;

import org.efaah.verbs.spi.AsyncEventVerbs;
import org.efaah.verbs.spi.CompletionChannelVerbs;
import org.efaah.verbs.spi.DatagramVerbs;
import org.efaah.verbs.spi.NetworkVerbs;
import org.efaah.verbs.spi.VerbsProvider;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Wraps a provider and records every SPI call that reaches it, by method name, so that a test can
 * assert that nothing reached the provider after some point (a freed handle would be used there).
 */
public final class CallRecorder {
    private static final Set<Class<?>> FACETS = Set.of(DatagramVerbs.class, CompletionChannelVerbs.class,
            AsyncEventVerbs.class, NetworkVerbs.class);
    private final VerbsProvider provider;
    private final List<String> calls = new CopyOnWriteArrayList<>();

    public CallRecorder(VerbsProvider real) {
        InvocationHandler handler = (proxy, method, args) -> {
            Class<?> facet = method.getDeclaringClass();
            try {
                if (FACETS.contains(method.getReturnType()) && facet == VerbsProvider.class) {
                    method.invoke(real, args); // EOPNOTSUPP where the real provider lacks it
                    return proxy; // its verbs are recorded too
                }
                calls.add(method.getName());
                return method.invoke(facet == DatagramVerbs.class ? real.datagrams()
                        : facet == CompletionChannelVerbs.class ? real.completionChannels()
                        : facet == AsyncEventVerbs.class ? real.asyncEvents()
                        : facet == NetworkVerbs.class ? real.networkChanges() : real, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        this.provider = (VerbsProvider) Proxy.newProxyInstance(VerbsProvider.class.getClassLoader(),
                new Class<?>[] {VerbsProvider.class, DatagramVerbs.class, CompletionChannelVerbs.class,
                    AsyncEventVerbs.class, NetworkVerbs.class}, handler);
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
