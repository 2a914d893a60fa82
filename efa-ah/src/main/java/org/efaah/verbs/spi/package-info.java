/**
 * For provider writers: the service-provider interface between efa-ah and an RDMA verbs
 * implementation. Applications need none of it but {@link org.efaah.verbs.spi.VerbsProvider} as a
 * type to hold (from {@link org.efaah.verbs.VerbsProviders#open()}).
 *
 * <p>{@link org.efaah.verbs.spi.VerbsProvider} is a small core (open and query a device, its
 * ports and GID table; PDs; AHs) plus facets, each a capability a provider may offer:
 * {@link org.efaah.verbs.spi.DatagramVerbs} (CQs, memory regions, UD QPs, posts, polls),
 * {@link org.efaah.verbs.spi.CompletionChannelVerbs}, {@link org.efaah.verbs.spi.AsyncEventVerbs},
 * {@link org.efaah.verbs.spi.NetworkVerbs} (rtnetlink following) and
 * {@link org.efaah.verbs.spi.EfaVerbs} ({@code efadv.h}). A facet's accessor defaults to
 * {@link org.efaah.verbs.VerbsException} with EOPNOTSUPP, the one "unsupported" answer of the
 * whole SPI (as rdma-core's {@code libibverbs/dummy_ops.c}), and so does every verb added later,
 * so a provider written against an older SPI keeps compiling and says what it lacks.
 *
 * <p>Providers are found with {@link java.util.ServiceLoader} through
 * {@link org.efaah.verbs.spi.VerbsProviderFactory}; the carriers
 * {@link org.efaah.verbs.spi.CreatedAh}, {@link org.efaah.verbs.spi.QueuePairNumbers},
 * {@link org.efaah.verbs.spi.AsyncEvent} and {@link org.efaah.verbs.spi.NetworkChange} pass
 * results from a provider to the library.
 */
package org.efaah.verbs.spi;
