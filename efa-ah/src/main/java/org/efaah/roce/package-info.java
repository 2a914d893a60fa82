/**
 * RoCE network following: the changes under a RoCE port that no verbs event reports and that
 * make AHs stale (a neighbour's new MAC or its deletion, the port's netdev changing its MAC or
 * MTU or going down), read from rtnetlink by one thread per process.
 *
 * <p>For users who hold RoCE AHs outside an AH cache, or want to see these changes:
 * {@link org.efaah.roce.RoceNetwork#subscribe} hands each {@link org.efaah.roce.NetworkEvent} to
 * a listener. {@code org.efaah.cache} subscribes by itself for every RoCE device it holds AHs on.
 * Nothing here runs for EFA or InfiniBand devices.
 *
 * <p>Depends on {@code org.efaah.verbs} (the device and its GID netdevs), on the provider's
 * network facet in {@code org.efaah.verbs.spi} ({@code NetworkVerbs}), on
 * {@code org.efaah.internal} (the background reader) and on {@code org.efaah.health}; the cache
 * depends on it, and verbs knows nothing of it.
 */
package org.efaah.roce;
