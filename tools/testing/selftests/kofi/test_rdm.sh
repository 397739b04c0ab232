#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# FI_EP_RDM endpoints and address vectors (kofi_rdm_test.ko), built by the
# core over each provider's MSG endpoints, once per provider and device;
# each run is a KUnit suite named rdm_<provider>_<device>.
. "$(dirname "$0")/per_transport.sh"
per_transport kofi_rdm_test rdm
