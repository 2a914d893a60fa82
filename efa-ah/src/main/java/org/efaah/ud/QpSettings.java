package org.efaah.ud;

import org.efaah.verbs.QueuePairType;

/**
 * What an endpoint's verbs objects are made with and checked against the device by: the part of the
 * endpoint's options that {@link EndpointResources} reads, so that it needs no endpoint type. The
 * endpoint's public options record is the one implementation.
 */
interface QpSettings {
    int portNum();

    long qkey();

    int sendDepth();

    int receiveDepth();

    QueuePairType transport();

    int rnrRetry();
}
