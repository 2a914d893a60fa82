/**
 * Health as data: a {@link org.efaah.health.HealthReport} (a status and every check with its
 * figure and threshold) that the API, the MXBean, the Micrometer gauge and the command line all
 * render. Made by {@link org.efaah.verbs.Device#health} and
 * {@link org.efaah.cache.CacheInspection#health}; depends on nothing else of efa-ah.
 */
package org.efaah.health;
