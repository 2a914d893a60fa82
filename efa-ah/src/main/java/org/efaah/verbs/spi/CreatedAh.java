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
}
