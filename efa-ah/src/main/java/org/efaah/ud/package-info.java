/**
 * UD datagrams through cached AHs: {@link org.efaah.ud.UdEndpoint} owns a UD QP, its CQs and
 * registered buffers, sends through {@link org.efaah.cache.AddressHandle}s (kept alive until the
 * send completes) and answers a {@link org.efaah.ud.Datagram} through a return-path AH made from
 * the work completion. {@link org.efaah.ud.EndpointAddress} is what peers exchange out of band.
 */
package org.efaah.ud;
