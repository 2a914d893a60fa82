/**
 * RDMA verbs for users: the owning objects over a provider, and nothing of any implementation.
 *
 * <p>Providers implement {@link org.efaah.verbs.spi.VerbsProvider} (package
 * {@code org.efaah.verbs.spi}, for provider writers), are found with {@link java.util.ServiceLoader}
 * and chosen by {@link org.efaah.verbs.VerbsProviders}. Above the SPI sit the owning objects applications use:
 * {@link org.efaah.verbs.Device} ({@code ibv_context}), {@link org.efaah.verbs.ProtectionDomain}
 * ({@code ibv_pd}) and the values describing AHs: {@link org.efaah.verbs.Gid} (16 bytes, network
 * order) and {@link org.efaah.verbs.AddressHandleAttributes} ({@code struct ibv_ah_attr}).
 *
 * <p>Bad input is rejected before any provider call with {@link java.lang.IllegalArgumentException}
 * naming the field, the value and the valid range; device failures raise
 * {@link org.efaah.verbs.VerbsException} with the errno by name.
 */
package org.efaah.verbs;
