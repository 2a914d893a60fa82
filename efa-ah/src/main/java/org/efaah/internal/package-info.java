/**
 * Not API: helpers the library's own packages share (range checks, the background reader's
 * lifecycle). Public only because Java has no narrower visibility across packages; anything here
 * may change or go in any release. Applications and providers must not use it.
 */
package org.efaah.internal;
