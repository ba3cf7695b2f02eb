# shellcheck shell=bash
# with-rdma, host side: where CMD runs (the host for a program that links no RDMA
# library, else native, native-rxe or a VM), and running it as a job of a VM's agent with
# its output relayed: in the shared VM, or in a one-off VM booted for it. Sourced by
# scripts/with-rdma after common.sh and vm.sh.

# wait_job BASE VMPID START_TIMEOUT: relay BASE.out/.err to our stdout/stderr (reading
# on from where the last read stopped) until the job is done; sets JOB_RC. Returns 1 if
# the VM went down first, or did not start the job within START_TIMEOUT seconds.
wait_job() {
	local base=$1 vmpid=$2 start_timeout=$3 ofd efd n=0 started=0 t0=$SECONDS rc=1
	exec {ofd}<"$base.out" {efd}<"$base.err"
	JOB_RC=
	while :; do
		if job_done "$base"; then
			rc=0
			break
		fi
		if ! pid_alive "$vmpid"; then
			job_done "$base" && rc=0 # finished right before the VM went down
			break
		fi
		cat <&"$ofd"
		cat <&"$efd" >&2
		if ((!started)); then
			if [[ -e $base.started ]]; then
				started=1
			elif ((SECONDS - t0 > start_timeout)); then
				err "the VM did not start the job within ${start_timeout}s"
				break
			fi
		fi
		# poll fast at first: most jobs (test binaries) are short
		if ((n < 25)); then nap 0.02; elif ((n < 60)); then nap 0.05; else nap 0.2; fi
		((n++))
	done
	cat <&"$ofd"
	cat <&"$efd" >&2
	exec {ofd}<&- {efd}<&-
	return "$rc"
}

# exec_cmd CMD [ARGS...]: exec natively, with a plain message for a missing command.
exec_cmd() {
	close_nap
	if [[ $1 != */* ]] && ! command -v -- "$1" >/dev/null; then
		msg "$1: command not found"
		exit 127
	fi
	exec -- "$@"
}

# run_in DIR NAME WHERE CMD [ARGS...]: run CMD as a job of the agent of the VM whose state
# is in DIR and exit with its status. NAME names the VM in errors; WHERE is the line that
# says where CMD runs.
run_in() {
	local dir=$1 name=$2 where=$3 pid
	shift 3
	pid=$(vm_pid "$dir")
	new_job "$dir/queue" || exit "$EXIT_INFRA"
	local base=$JOB
	trap 'touch -- "$base.cancel"; exit 130' INT
	trap 'touch -- "$base.cancel"; exit 143' TERM HUP
	write_job "$base.job" "$@" || {
		rm -f -- "$base".*
		err "cannot write job to $dir/queue"
		exit "$EXIT_INFRA"
	}
	msg "$where"
	if wait_job "$base" "$pid" 120; then
		rm -f -- "$base".*
		trap - INT TERM HUP
		exit "$JOB_RC"
	fi
	trap - INT TERM HUP
	if pid_alive "$pid"; then
		touch -- "$base.cancel"
	else
		err "$name (pid $pid) went down while running: $*"
		show_vng_log "vng output" "$dir/vng.log"
		rm -f -- "$base".*
	fi
	exit "$EXIT_INFRA"
}

# check_kernel READY WHAT: with WITH_RDMA_KERNEL set, the running VM(s) WHAT (whose
# release is in the file READY) must run that kernel.
check_kernel() {
	local kver=
	[[ -n ${WITH_RDMA_KERNEL:-} ]] || return 0
	pick_kernel || exit "$EXIT_USAGE"
	read -r kver <"$1" 2>/dev/null
	if [[ $kver != "$KREL" ]]; then
		err "the $2 runs kernel ${kver:-?}, not WITH_RDMA_KERNEL's $KREL:" \
			"stop it or start it with that kernel"
		exit "$EXIT_USAGE"
	fi
}

run_shared() {
	local kver=
	read -r kver <"$VM_DIR/ready" 2>/dev/null
	run_in "$VM_DIR" "shared VM" "vm (shared, rxe0 on lo, kernel ${kver:-?})" "$@"
}

run_oneshot() {
	mkdir -p -- "$JOBS_DIR" || exit "$EXIT_INFRA"
	new_job "$JOBS_DIR" || exit "$EXIT_INFRA"
	local base=$JOB
	write_job "$base.job" "$@" || {
		rm -f -- "$base".*
		err "cannot write job to $JOBS_DIR"
		exit "$EXIT_INFRA"
	}
	pick_kernel || {
		rm -f -- "$base".*
		exit "$EXIT_INFRA"
	}
	msg "vm (rxe0 on lo, kernel $KREL)"
	start_vng "$base.log" "bash $(shq "$GUEST") oneshot $(shq "$base")" || {
		rm -f -- "$base".*
		exit "$EXIT_INFRA"
	}
	local pid=$VNG_PID
	trap 'kill_group "$pid"; rm -f -- "$base".*; exit 130' INT
	trap 'kill_group "$pid"; rm -f -- "$base".*; exit 143' TERM HUP
	local boot_timeout=${WITH_RDMA_BOOT_TIMEOUT:-300}
	if wait_job "$base" "$pid" "$boot_timeout"; then
		# Give the guest a moment to power off by itself, then make sure it is gone.
		local i
		for ((i = 0; i < 50; i++)); do
			pid_alive "$pid" || break
			nap 0.1
		done
		kill_group "$pid"
		trap - INT TERM HUP
		[[ ${WITH_RDMA_DEBUG:-} == 1 ]] && mv -f -- "$base.log" "$WR_DIR/last-vm.log"
		rm -f -- "$base".*
		exit "$JOB_RC"
	fi
	trap - INT TERM HUP
	kill_group "$pid"
	wait "$pid" 2>/dev/null
	local vrc=$?
	local hint=1
	if [[ -e $base.setupfail ]]; then
		err "RDMA setup inside the VM failed (kernel $KREL)"
		show_log "guest setup output" "$base.setup"
		hint=0
	elif [[ -e $base.started ]]; then
		err "VM died while running: $* (vng exit status $vrc)"
	else
		err "VM failed to boot or run the command (kernel $KERNEL, vng exit status $vrc)"
	fi
	show_vng_log "vng output" "$base.log"
	[[ $hint == 0 || ${WITH_RDMA_DEBUG:-} == 1 ]] ||
		msg "hint: WITH_RDMA_DEBUG=1 captures the guest kernel console"
	local keep=$WR_DIR/last-failure.log
	cat -- "$base.log" "$base.setup" >"$keep" 2>/dev/null && msg "full log: $keep"
	rm -f -- "$base".*
	exit "$EXIT_INFRA"
}

# links_no_rdma PATH: PATH is a program cargo built (a file under the target dir, as cargo
# gives its runner) whose ELF dynamic section names only C runtime libraries: it does not
# link libibverbs (nor librdmacm, libibumad, a provider, ...), so it cannot open a device
# itself and runs on the host. A script, a static binary, any other library, or no
# readelf: not known to be free of RDMA, so it is not.
# Under scripts/with-ibsim (IBSIM_SOCKNAME set, libumad2sim.so in LD_PRELOAD) libibumad
# talks to the simulator, so a program that links it (and no other RDMA library) runs on
# the host too; it sets LINKS_UMAD=1 then.
links_no_rdma() {
	local path=$1 line lib dynamic=0 sim=0
	LINKS_UMAD=0
	[[ -n ${IBSIM_SOCKNAME:-} && ${LD_PRELOAD:-} == *libumad2sim.so* ]] && sim=1
	[[ $path == */* ]] || return 1
	[[ $path == /* ]] || path=$PWD/$path
	[[ $path == "$TARGET"/* && -f $path && -x $path ]] || return 1
	command -v readelf >/dev/null || return 1
	while IFS= read -r line; do
		case $line in
		"Dynamic section at "*) dynamic=1 ;;
		*"(NEEDED)"*)
			lib=${line##*[}
			case ${lib%]} in
			libc.so.* | libm.so.* | libgcc_s.so.* | libpthread.so.* | libdl.so.* | librt.so.* | \
				libutil.so.* | ld-linux*.so.*) ;;
			libibumad.so.*) ((sim)) && LINKS_UMAD=1 || return 1 ;;
			*) return 1 ;;
			esac
			;;
		esac
	done < <(LC_ALL=C readelf -d -- "$path" 2>/dev/null)
	((dynamic))
}

run_cmd() {
	local mode=${WITH_RDMA_MODE:-auto}
	case $mode in
	auto | native | native-rxe | vm) ;;
	*)
		err "WITH_RDMA_MODE must be native, native-rxe or vm (got '$mode')"
		exit "$EXIT_USAGE"
		;;
	esac
	local topology=${WITH_RDMA_TOPOLOGY:-single}
	case $topology in
	single | pair | netns) ;;
	*)
		err "WITH_RDMA_TOPOLOGY must be single, pair or netns (got '$topology')"
		exit "$EXIT_USAGE"
		;;
	esac

	init_paths
	if [[ ${WITH_RDMA_ALWAYS:-} != 1 ]] && links_no_rdma "$1"; then
		if ((LINKS_UMAD)); then
			msg "host (${1##*/} links only libibumad, on the simulated fabric)"
		else
			msg "host (${1##*/} links no RDMA library)"
		fi
		exec_cmd "$@"
	fi
	# VM a of the pair, unless a native mode is forced: then the peer is a host of yours,
	# described by the WITH_RDMA_* link variables.
	[[ $topology == pair ]] && [[ $mode == auto || $mode == vm ]] && run_pair "$@"
	# Two hosts in one: CMD as host a of two namespaces of wherever it runs (guest netns-run).
	[[ $topology == netns ]] && set -- bash "$GUEST" netns-run "$@"

	if [[ $mode == auto || $mode == native ]] && find_active_port; then
		msg "native ($ACTIVE_DEV port $ACTIVE_PORT)"
		exec_cmd "$@"
	fi
	if [[ $mode == native ]]; then
		err "WITH_RDMA_MODE=native but no ACTIVE port under /sys/class/infiniband"
		exit "$EXIT_USAGE"
	fi

	if [[ $mode == auto || $mode == native-rxe ]]; then
		if [[ $EUID -eq 0 ]] && command -v modprobe >/dev/null && command -v rdma >/dev/null &&
			setup_rxe 5 >/dev/null 2>&1 && find_active_port; then
			msg "native-rxe ($ACTIVE_DEV on lo)"
			exec_cmd "$@"
		fi
		if [[ $mode == native-rxe ]]; then
			err "WITH_RDMA_MODE=native-rxe but rdma_rxe could not be set up on this host (need root, the rdma_rxe module and the rdma tool)"
			exit "$EXIT_USAGE"
		fi
	fi

	if ! mkdir -p -- "$WR_DIR"; then
		err "cannot create $WR_DIR"
		exit "$EXIT_INFRA"
	fi
	# A shared VM that is still booting: wait for it rather than booting another one.
	local state t0=$SECONDS
	state=$(vm_state)
	while [[ $state == STARTING ]] && ((SECONDS - t0 < ${WITH_RDMA_BOOT_TIMEOUT:-300})); do
		nap 0.5
		state=$(vm_state)
	done
	if [[ $state == UP ]]; then
		check_kernel "$VM_DIR/ready" "shared VM"
		run_shared "$@"
	fi
	vm_asked "a VM"
	run_oneshot "$@"
}

# vm_asked WHAT: returns if booting WHAT for this command was asked for (WITH_RDMA_VM=1, or
# WITH_RDMA_MODE=vm); else says in one line how to ask and exits: a `cargo run` or `cargo
# test` in a clone on a machine without a device (this script is its cargo runner) never
# boots a VM unawares. The project's scripts that run on a device ask for one.
vm_asked() {
	[[ ${WITH_RDMA_VM:-} == 1 || ${WITH_RDMA_MODE:-} == vm ]] && return
	err "no ACTIVE RDMA port here and no VM up: WITH_RDMA_VM=1 boots $1 with SoftRoCE for the command (docs/testing.md)"
	exit "$EXIT_USAGE"
}
