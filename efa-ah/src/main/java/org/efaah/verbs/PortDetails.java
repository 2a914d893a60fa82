package org.efaah.verbs;

/**
 * The fields of {@code struct ibv_port_attr} (from {@code ibv_query_port(3)}) that
 * {@code ibv_devinfo -v} prints beyond {@link PortAttributes}, named as there; all are unsigned
 * in C and none exceeds 31 bits.
 *
 * @param portCapFlags  {@code port_cap_flags}: {@code IBV_PORT_*} capability bits
 * @param portCapFlags2 {@code port_cap_flags2}
 * @param maxVlNum      {@code max_vl_num}: encoded as InfiniBand does (1 = 1 VL, 2 = 2, 3 = 4, 4 = 8, 5 = 15)
 * @param badPkeyCntr   {@code bad_pkey_cntr}
 * @param qkeyViolCntr  {@code qkey_viol_cntr}: datagrams dropped for a wrong Q_Key
 * @param smSl          {@code sm_sl}: the subnet manager's service level
 * @param pkeyTblLen    {@code pkey_tbl_len}
 * @param subnetTimeout {@code subnet_timeout}
 * @param initTypeReply {@code init_type_reply}
 * @param activeWidth   {@code active_width}: 1 = 1X, 2 = 4X, 4 = 8X, 8 = 12X, 16 = 2X
 * @param activeSpeed   {@code active_speed}, or {@code active_speed_ex} where libibverbs has it
 *                      and the kernel set it: 1 = 2.5 Gbps per lane .. 32 = 25 Gbps (EDR), 64, 128, 256
 * @param physState     {@code phys_state}: 5 = LINK_UP
 */
public record PortDetails(int portCapFlags, int portCapFlags2, int maxVlNum, int badPkeyCntr, int qkeyViolCntr,
                          int smSl, int pkeyTblLen, int subnetTimeout, int initTypeReply, int activeWidth,
                          int activeSpeed, int physState) {
}
