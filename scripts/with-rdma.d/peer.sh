# shellcheck shell=bash
# with-rdma, inside a VM of the pair: `with-rdma --on-peer CMD...` runs CMD in the other
# VM; in the namespace topology, in the peer's namespace. Sourced by scripts/with-rdma after
# common.sh.

# relay FD OUTFD: copy what FD has to OUTFD, without forking (a partial last line too;
# the next call goes on from there).
relay() {
	local line
	while IFS= read -r -u "$1" line; do
		printf '%s\n' "$line" >&"$2"
	done
	[[ -z $line ]] || printf '%s' "$line" >&"$2"
}

# on_peer CMD [ARGS...] (inside a VM of the pair): run CMD in the other VM, as a job of
# its agent, and exit with CMD's status. The job is written and polled as the host does
# (but without forking, which is slow under TCG). The other VM's liveness cannot be seen
# from here: a job that does not start within 60 s fails with 125; once it runs, the
# caller bounds its wait (or kills us: SIGTERM/SIGINT/SIGHUP cancel the job).
on_peer() {
	local q=${WITH_RDMA_PEER_QUEUE:-} ofd efd t0=$SECONDS
	if [[ -n ${WITH_RDMA_PEER_NETNS:-} ]]; then # the namespace topology: the peer is here
		exec ip netns exec "$WITH_RDMA_PEER_NETNS" env \
			WITH_RDMA_LINK_DEVICE="$WITH_RDMA_PEER_DEVICE" WITH_RDMA_LINK_NETDEV="$NS_VETH_B" \
			WITH_RDMA_LOCAL_ADDR="$WITH_RDMA_PEER_ADDR" WITH_RDMA_PEER_ADDR="$WITH_RDMA_LOCAL_ADDR" \
			WITH_RDMA_PEER_NETNS= WITH_RDMA_PEER_DEVICE= WITH_RDMA_PEER_EXEC= "$@"
	fi
	if [[ -z $q || ! -d $q ]]; then
		err "--on-peer works only inside a VM of the pair (WITH_RDMA_TOPOLOGY=pair)"
		exit "$EXIT_USAGE"
	fi
	if (($# == 0)); then
		err "--on-peer needs a command"
		exit "$EXIT_USAGE"
	fi
	new_job "$q" || exit "$EXIT_INFRA"
	local base=$JOB
	trap 'touch -- "$base.cancel"; exit 130' INT
	trap 'touch -- "$base.cancel"; exit 143' TERM HUP
	write_job "$base.job" "$@" || {
		rm -f -- "$base".*
		err "cannot write job to $q"
		exit "$EXIT_INFRA"
	}
	exec {ofd}<"$base.out" {efd}<"$base.err"
	until job_done "$base"; do
		relay "$ofd" 1
		relay "$efd" 2
		if ((SECONDS - t0 > 60)) && [[ ! -e $base.started ]]; then
			touch -- "$base.cancel"
			err "the peer VM did not start the job within 60s: $*"
			exit "$EXIT_INFRA"
		fi
		nap 0.1
	done
	relay "$ofd" 1
	relay "$efd" 2
	trap - INT TERM HUP
	rm -f -- "$base".*
	exit "$JOB_RC"
}
