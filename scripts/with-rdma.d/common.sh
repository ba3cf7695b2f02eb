# shellcheck shell=bash
# with-rdma, both sides (sourced by scripts/with-rdma on the host and by with-rdma.d/guest
# in a VM): constants, messages, fork-free sleeping, process checks, the RDMA port
# set-up and the job files.
#
# A job is a generated bash script that recreates the submitter's exported environment
# and working directory, then execs the command. It is written to a tmp name and renamed
# to <id>.job in a queue directory the guest's agent scans; the guest writes
# <id>.started (the job's pgid), appends to <id>.out and <id>.err, and writes <id>.rc
# last. The submitter polls those files (no streaming pipe: output shows up with up to
# ~0.2 s delay) and may create <id>.cancel, on which the agent kills the job.

ME=with-rdma
EXIT_INFRA=125 # VM could not boot / set up, or died under CMD
EXIT_USAGE=2

# The link of the VM pair (pair.sh boots it, guest sets it up).
PAIR_NET=198.18.0         # a is .1, b is .2 (RFC 2544 benchmarking space)
PAIR_MAC=52:54:00:12:34:0 # a ...:01, b ...:02
LINK_DEV=rxe1
# The rdma_cm device of every host and VM (setup_cm): not rxe1, which the pair uses.
CM_DEV=rxe_cm
CM_NETDEV=cm0
CM_ADDR=198.18.1.1
# The two hosts inside one VM (WITH_RDMA_TOPOLOGY=netns, setup_netns in guest): this host's
# end of a veth pair in the VM's namespace, the peer's in the namespace NS_PEER, with the
# pair's addresses (PAIR_NET .1 and .2) and a link device on each end.
NS_PEER=rdma-peer
NS_VETH_A=rl-a
NS_VETH_B=rl-b
# The iWARP device of a VM running the kernel scripts/build-siw built soft-iWARP for
# (setup_siw): siw0 on the dummy netdev iw0.
IWARP_DEV=siw0
IWARP_NETDEV=iw0
IWARP_ADDR=198.18.2.1

msg() { printf '%s: %s\n' "$ME" "$*" >&2; }
err() { printf '%s: error: %s\n' "$ME" "$*" >&2; }

# ---------------------------------------------------------------- small helpers

# nap SECONDS: fork-free sleep (read with timeout on a pipe nobody writes to).
NAP_FD=
nap() {
	if [[ -z $NAP_FD ]] && ! exec {NAP_FD}<> <(:); then
		NAP_FD=
		sleep "$1"
		return
	fi
	read -r -t "$1" -u "$NAP_FD" _ || :
}
close_nap() {
	if [[ -n $NAP_FD ]]; then
		exec {NAP_FD}<&-
		NAP_FD=
	fi
}

# pid_alive PID: process exists and is not a zombie (a dead vng we did not start may
# linger as a zombie if nobody reaps it, and `kill -0` would still succeed on it).
pid_alive() {
	local stat
	[[ $1 =~ ^[0-9]+$ ]] && [[ -r /proc/$1/stat ]] || return 1
	read -r stat <"/proc/$1/stat" 2>/dev/null || return 1
	stat=${stat##*) }
	[[ ${stat%% *} != Z ]]
}

# find_active_port: sets ACTIVE_DEV / ACTIVE_PORT to the first ACTIVE port.
find_active_port() {
	local f state rest
	for f in /sys/class/infiniband/*/ports/*/state; do
		[[ -r $f ]] || continue
		read -r state <"$f" 2>/dev/null || continue
		[[ $state =~ ^[0-9]+:\ ACTIVE$ ]] || continue
		rest=${f#/sys/class/infiniband/}
		ACTIVE_DEV=${rest%%/*}
		rest=${rest#*/ports/}
		ACTIVE_PORT=${rest%%/*}
		return 0
	done
	return 1
}

# wait_active SECONDS
wait_active() {
	local i
	for ((i = 0; i < $1 * 5; i++)); do
		find_active_port && return 0
		nap 0.2
	done
	find_active_port
}

# setup_rxe SECONDS: load rdma_rxe and put rxe0 on lo (needs root), then wait up to
# SECONDS for its port to be ACTIVE; then set up the CM device (setup_cm). Used on the
# host (native-rxe) and inside the guest.
setup_rxe() {
	local timeout=$1
	ip link set lo up 2>/dev/null
	modprobe rdma_rxe || return 1
	if [[ ! -e /sys/class/infiniband/rxe0 ]]; then
		rdma link add rxe0 type rxe netdev lo || return 1
	fi
	wait_active "$timeout" && setup_cm
}

# dummy_device NETDEV ADDR DEV TYPE: the dummy netdev NETDEV with ADDR/24, up, and the RDMA
# device DEV of TYPE (rxe or siw) on it; what exists already is kept.
dummy_device() {
	if [[ ! -e /sys/class/net/$1 ]]; then
		ip link add "$1" type dummy || return 1
		ip addr add "$2/24" dev "$1" || return 1
	fi
	# ARP on (a dummy has it off), so that a neighbour nobody answers for times out as on a
	# real link, instead of resolving at once.
	ip link set "$1" arp on up || return 1
	if [[ ! -e /sys/class/infiniband/$3 ]]; then
		rdma link add "$3" type "$4" netdev "$1" || return 1
	fi
}

# setup_cm: the device for rdma_cm (route resolution fails on rxe0, whose netdev lo has
# no route of its own): CM_DEV on the dummy netdev CM_NETDEV with CM_ADDR/24. Exports
# WITH_RDMA_CM_DEVICE and WITH_RDMA_CM_ADDR for the commands.
setup_cm() {
	dummy_device "$CM_NETDEV" "$CM_ADDR" "$CM_DEV" rxe || return 1
	wait_gid "$CM_DEV" "$CM_ADDR" || return 1
	export WITH_RDMA_CM_DEVICE=$CM_DEV WITH_RDMA_CM_ADDR=$CM_ADDR
}

# setup_siw MODULE: load soft-iWARP from MODULE (scripts/build-siw's siw.ko) and put
# IWARP_DEV on the dummy netdev IWARP_NETDEV with IWARP_ADDR/24, then export
# WITH_RDMA_IWARP_DEVICE and WITH_RDMA_IWARP_ADDR. After setup_rxe (ib_core is loaded).
setup_siw() {
	if [[ ! -e /sys/module/siw ]]; then
		modprobe libcrc32c || return 1
		insmod "$1" || return 1
	fi
	dummy_device "$IWARP_NETDEV" "$IWARP_ADDR" "$IWARP_DEV" siw || return 1
	wait_active_dev "$IWARP_DEV" || return 1
	export WITH_RDMA_IWARP_DEVICE=$IWARP_DEV WITH_RDMA_IWARP_ADDR=$IWARP_ADDR
}

# wait_active_dev DEV: wait up to 10 s for port 1 of DEV to be ACTIVE.
wait_active_dev() {
	local state i
	for ((i = 0; i < 100; i++)); do
		read -r state <"/sys/class/infiniband/$1/ports/1/state" && [[ $state == *ACTIVE ]] &&
			return 0
		nap 0.1
	done
	echo "$ME: $1 is not ACTIVE after 10 s"
	return 1
}

# wait_gid DEV ADDR: wait up to 10 s for port 1 of DEV to be ACTIVE with the IPv4-mapped
# GID of ADDR in its table.
wait_gid() {
	local dev=$1 want f i state gid
	# shellcheck disable=SC2086 # the dotted quad splits into its numbers
	printf -v want '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${2//./ }
	for ((i = 0; i < 100; i++)); do
		if read -r state <"/sys/class/infiniband/$dev/ports/1/state" &&
			[[ $state == *ACTIVE ]]; then
			for f in "/sys/class/infiniband/$dev/ports/1/gids/"{0..15}; do
				read -r gid <"$f" && [[ $gid == "$want" ]] && return 0
			done
		fi
		nap 0.1
	done
	echo "$ME: $dev is not ACTIVE with GID $want after 10 s"
	return 1
}

# rxe_expect: export WITH_RDMA_EXPECT, the rxe features this guest's kernel has (comma
# separated, for the tests' kernel feature checks): `atomic_write` (rxe has it since
# Linux 6.2) and `odp` (on-demand paging, since 6.14).
rxe_expect() {
	local rel major minor
	read -r rel </proc/sys/kernel/osrelease
	major=${rel%%.*}
	minor=${rel#*.}
	minor=${minor%%[!0-9]*}
	WITH_RDMA_EXPECT=
	((major > 6 || (major == 6 && minor >= 2))) && WITH_RDMA_EXPECT+=atomic_write,
	((major > 6 || (major == 6 && minor >= 14))) && WITH_RDMA_EXPECT+=odp,
	export WITH_RDMA_EXPECT=${WITH_RDMA_EXPECT%,}
}

# ---------------------------------------------------------------- job files

# skip_env NAME: a variable a job does not carry (session-specific, or ours).
skip_env() {
	case $1 in
	_ | SHLVL | PWD | OLDPWD | HOSTNAME | DISPLAY | WAYLAND_DISPLAY | XAUTHORITY | SSH_* | \
		XDG_RUNTIME_DIR | XDG_SESSION_* | DBUS_SESSION_BUS_ADDRESS | TMUX | TMUX_PANE | STY | \
		WINDOW | COLUMNS | LINES | SHELLOPTS | BASHOPTS | WITH_RDMA_*) return 0 ;;
	esac
	return 1
}

# write_job DEST CMD [ARGS...]: generate a bash script that recreates our exported
# environment and cwd, then execs CMD. Written to DEST.tmp and renamed, so the agent
# never sees a partial job.
write_job() {
	local dest=$1 name
	shift
	local -a names
	mapfile -t names < <(compgen -e)
	(
		umask 077 # the job carries the whole environment
		{
			printf '# %s job\n' "$ME"
			for name in "${names[@]}"; do
				skip_env "$name" && continue
				printf 'export %s=%q\n' "$name" "${!name}"
			done
			printf 'cd -- %q || { echo %q >&2; exit %d; }\n' \
				"$PWD" "$ME: cannot cd to $PWD inside the VM" "$EXIT_INFRA"
			if [[ $1 != */* ]]; then
				printf 'command -v -- %q >/dev/null || { echo %q >&2; exit 127; }\n' \
					"$1" "$ME: $1: command not found"
			fi
			printf 'exec --'
			printf ' %q' "$@"
			printf '\n'
		} >"$dest.tmp"
	) && mv -f -- "$dest.tmp" "$dest"
}

# new_job DIR: pick a unique job id in DIR and create its empty .out/.err (noclobber
# makes the creation atomic, so concurrent submitters cannot collide). Sets JOB.
new_job() {
	local dir=$1 id i
	for ((i = 0; i < 100; i++)); do
		id=$$-$RANDOM$RANDOM
		if (set -o noclobber && : >"$dir/$id.out") 2>/dev/null; then
			: >"$dir/$id.err"
			JOB=$dir/$id
			return 0
		fi
	done
	err "cannot create job files in $dir"
	return 1
}

# job_done BASE: BASE.rc holds a complete line (the guest writes "N\n" in one go; `read`
# fails on a missing or not yet complete file). Sets JOB_RC.
job_done() {
	[[ -e $1.rc ]] && read -r JOB_RC <"$1.rc" && [[ $JOB_RC =~ ^[0-9]+$ ]]
}
