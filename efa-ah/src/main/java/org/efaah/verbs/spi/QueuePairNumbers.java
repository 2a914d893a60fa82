package org.efaah.verbs.spi;

/**
 * What {@code ibv_create_qp(3)} returns for a UD QP.
 *
 * @param handle the provider's opaque handle ({@code struct ibv_qp *} natively)
 * @param qpn    the 24-bit QP number peers address
 */
public record QueuePairNumbers(long handle, int qpn) {
}
