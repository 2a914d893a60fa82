package org.efaah.verbs.mock;

import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.spi.VerbsProviderFactory;

/** Makes the mock provider, configured by {@link MockConfig#fromSystemProperties()}. Always available. */
public final class MockVerbsProviderFactory implements VerbsProviderFactory {
    @Override
    public String name() {
        return "mock";
    }

    @Override
    public int priority() {
        return 0;
    }

    @Override
    public boolean isAvailable() {
        return true;
    }

    @Override
    public Throwable unavailabilityCause() {
        return null;
    }

    @Override
    public VerbsProvider create() {
        return new MockVerbsProvider(MockConfig.fromSystemProperties());
    }
}
