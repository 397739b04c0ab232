#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The conformance suite (kofi_conformance.ko) once per provider and device;
# each run is a KUnit suite named conformance_<provider>_<device>.
. "$(dirname "$0")/per_transport.sh"
per_transport kofi_conformance conformance ports
