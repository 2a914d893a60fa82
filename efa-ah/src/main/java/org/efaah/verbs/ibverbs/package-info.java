/**
 * The native provider: the real libibverbs (and libefa, opened with {@code dlopen}) through a
 * small C stub and a JavaCPP-generated JNI library.
 *
 * <p>Available when the JNI library for this platform ({@code linux-x86_64} or
 * {@code linux-arm64}) loads and libibverbs lists at least one device; otherwise
 * {@link org.efaah.verbs.ibverbs.NativeVerbsProviderFactory#unavailabilityCause()} says why
 * (not built, the JavaCPP cache directory unusable, libibverbs missing, no device).
 */
package org.efaah.verbs.ibverbs;
