/**
 * Metrics for the AH cache: a Micrometer binder. Needs {@code io.micrometer:micrometer-core} on
 * the class path, an optional dependency of efa-ah; the JMX view needs nothing and lives in
 * {@code org.efaah.cache}.
 */
package org.efaah.metrics;
