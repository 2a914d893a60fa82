package org.efaah.verbs.ibverbs;

import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.spi.VerbsProviderFactory;
import org.efaah.verbs.VerbsProviders;

/**
 * Finds the native provider for {@link VerbsProviders} (registered with
 * {@link java.util.ServiceLoader}). Available when the JNI library loads and libibverbs lists at
 * least one device, unless {@code -Defaah.native.disable=true}; the probe runs once per JVM, on
 * first use, and its failure is kept as {@link #unavailabilityCause()}.
 */
public final class NativeVerbsProviderFactory implements VerbsProviderFactory {
    /** The name users select the native provider by. */
    public static final String NAME = "native";
    /** Above the mock's, so that {@code auto} prefers real hardware when there is some. */
    static final int PRIORITY = 100;

    /** For {@link java.util.ServiceLoader}. */
    public NativeVerbsProviderFactory() {
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int priority() {
        return PRIORITY;
    }

    @Override
    public boolean isAvailable() {
        return NativeLibrary.get().available();
    }

    /** True under {@code -Defaah.native.disable=true}. */
    @Override
    public boolean disabledByUser() {
        return Boolean.getBoolean(NativeLibrary.DISABLE_PROPERTY);
    }

    /**
     * Why the provider is unavailable, e.g. "no RDMA device: ibv_get_device_list returned none" or
     * "native library failed to load: ..." with the load error as cause; null when available.
     */
    @Override
    public Throwable unavailabilityCause() {
        return NativeLibrary.get().cause();
    }

    /**
     * A new native provider.
     *
     * @throws UnsupportedOperationException when unavailable, with {@link #unavailabilityCause()} as cause
     */
    @Override
    public VerbsProvider create() {
        Throwable cause = unavailabilityCause();
        if (cause != null) {
            throw new UnsupportedOperationException("the native verbs provider is unavailable: "
                    + VerbsProviders.describe(cause), cause);
        }
        return new NativeVerbsProvider();
    }

    @Override
    public String toString() {
        return "NativeVerbsProviderFactory[" + (isAvailable() ? "available" : VerbsProviders.describe(unavailabilityCause())) + "]";
    }
}
