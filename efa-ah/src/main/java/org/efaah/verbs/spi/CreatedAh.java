package org.efaah.verbs.spi;

/**
 * What a provider returns from {@code ibv_create_ah}.
 *
 * @param handle the provider's opaque handle for the AH (the {@code struct ibv_ah *} for the
 *               native provider); passed back unchanged to {@link VerbsProvider#destroyAh}
 * @param ahn    the EFA AH number from {@code efadv_query_ah}, 0..65535, or {@link #NO_AHN} where
 *               the device has none (non-EFA devices)
 */
public record CreatedAh(long handle, int ahn) {
    /** The {@code ahn} of an AH on a device that has no AH numbers. */
    public static final int NO_AHN = -1;

    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning and format as the generated ones.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof CreatedAh that && that.handle == handle && that.ahn == ahn;
    }

    @Override
    public int hashCode() {
        int h = Long.hashCode(handle);
        h = 31 * h + ahn;
        return h;
    }

    @Override
    public String toString() {
        return new StringBuilder("CreatedAh[handle=").append(handle).append(", ahn=").append(ahn)
                .append(']').toString();
    }
}
