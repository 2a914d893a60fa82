/**
 * The mock provider: EFA-like devices in memory, for hosts without RDMA hardware (laptops, CI).
 *
 * <p>It models what the kernel, libibverbs and libefa do, failures included: {@code max_ah},
 * the three ways real devices answer a duplicate (PD, GID) create
 * ({@link org.efaah.verbs.mock.DuplicatePolicy}), create and destroy latency, injected errnos, and
 * UD datagrams between endpoints of one provider. Configured by
 * {@link org.efaah.verbs.mock.MockConfig} (API or {@code efaah.mock.*} system properties).
 */
package org.efaah.verbs.mock;
