#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The soft RDMA devices the verbs provider is tested on: siw and rxe links on
# the loopback netdev come up ACTIVE with Debian's rdma tool, and go away.
. "$(dirname "$0")/ktap_helpers.sh"
. "$(dirname "$0")/rdma_helpers.sh"

ktap_plan 6
for type in siw rxe; do
	ktap_expect_ok "${type}_link_add" rdma link add ${type}0 type $type netdev lo
	ktap_expect_ok "${type}_link_active" link_active ${type}0
	ktap_expect_ok "${type}_link_delete" rdma link delete ${type}0
done
ktap_finish
