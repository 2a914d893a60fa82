package org.efaah.verbs.spi;

/**
 * What {@code ibv_create_qp(3)} returns for a UD QP.
 *
 * @param handle the provider's opaque handle ({@code struct ibv_qp *} natively)
 * @param qpn    the 24-bit QP number peers address
 */
public record QueuePairNumbers(long handle, int qpn) {
    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning and format as the generated ones.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof QueuePairNumbers that && that.handle == handle && that.qpn == qpn;
    }

    @Override
    public int hashCode() {
        int h = Long.hashCode(handle);
        h = 31 * h + qpn;
        return h;
    }

    @Override
    public String toString() {
        return new StringBuilder("QueuePairNumbers[handle=").append(handle).append(", qpn=").append(qpn)
                .append(']').toString();
    }
}
