# shellcheck shell=bash
# with-rdma, host side: the VM pair (two hosts joined by a link) and its commands
# --pair-start, --pair-stop, --pair-status, and running CMD in VM a of the pair
# (WITH_RDMA_TOPOLOGY=pair). Sourced by scripts/with-rdma after common.sh, vm.sh and run.sh.
#
# Two VMs, a and b, each set up like the shared VM (rxe0 on lo) plus rxe1 on a virtio NIC.
# The NICs are joined by a qemu socket netdev (a's qemu listens on a free port of
# 127.0.0.1, b's connects to it): an Ethernet link between 198.18.0.1 (a) and 198.18.0.2
# (b). Commands run in a; from there `with-rdma --on-peer CMD` runs CMD in b.

pair_paths() {
	init_paths
	PAIR_DIR=$WR_DIR/pair
	PAIR_A=$PAIR_DIR/a
	PAIR_B=$PAIR_DIR/b
}

# pair_state: UP (both VMs up and the link checked), STARTING or DOWN.
pair_state() {
	local a b
	a=$(vm_state "$PAIR_A")
	b=$(vm_state "$PAIR_B")
	if [[ $a == UP && $b == UP && -e $PAIR_DIR/ready ]]; then
		echo UP
	elif [[ $a == DOWN && $b == DOWN ]]; then
		echo DOWN
	else
		echo STARTING
	fi
}

# free_tcp_port: a port in 20000-59999 that no TCP socket of this host uses.
free_tcp_port() {
	local port hex i
	for ((i = 0; i < 100; i++)); do
		port=$((20000 + RANDOM % 40000))
		printf -v hex ':%04X ' "$port"
		if ! grep -qsF -- "$hex" /proc/net/tcp /proc/net/tcp6; then
			echo "$port"
			return 0
		fi
	done
	return 1
}

# tcp_listening PORT: something listens on 127.0.0.1:PORT.
tcp_listening() {
	local line
	printf -v line '0100007F:%04X 00000000:0000 0A' "$1"
	grep -qsF -- "$line" /proc/net/tcp
}

# pair_boot SIDE SOCKET: boot VM SIDE (a or b) of the pair with its NIC on the qemu
# socket netdev SOCKET (listen=... or connect=...); records its pid.
pair_boot() {
	local side=$1 dir=$PAIR_DIR/$1 n=1
	[[ $side == b ]] && n=2
	start_vng "$dir/vng.log" "bash $(shq "$GUEST") pair-agent $(shq "$dir") $side" \
		--name "rdma-pair-$side" --no-dhcp \
		"--qemu-opts=-netdev socket,id=rlink,$2 -device virtio-net-pci,netdev=rlink,mac=$PAIR_MAC$n" ||
		return 1
	printf '%s %s\n' "$VNG_PID" "$(proc_start "$VNG_PID")" >"$dir/pid.tmp" &&
		mv -f -- "$dir/pid.tmp" "$dir/pid"
}

# pair_kill: stop both VMs of the pair at once (no clean power-off).
pair_kill() {
	local d
	for d in "$PAIR_A" "$PAIR_B"; do
		kill_group "$(vm_pid "$d")"
	done
}

# pair_fail WHY: report a failed start with both VMs' logs, clean up, exit.
pair_fail() {
	local d
	err "$1"
	pair_kill
	for d in "$PAIR_A" "$PAIR_B"; do
		show_log "agent log of ${d##*/}" "$d/agent.log"
		show_vng_log "vng output of ${d##*/}" "$d/vng.log"
	done
	show_log "link check" "$PAIR_DIR/check.log"
	cat -- "$PAIR_A/agent.log" "$PAIR_A/vng.log" "$PAIR_B/agent.log" "$PAIR_B/vng.log" \
		"$PAIR_DIR/check.log" >"$WR_DIR/last-failure.log" 2>/dev/null &&
		msg "full log: $WR_DIR/last-failure.log"
	rm -rf -- "$PAIR_DIR"
	exit "$EXIT_INFRA"
}

# pair_check: a reaches b over the link (a job of a's agent).
pair_check() {
	new_job "$PAIR_A/queue" || return 1
	local base=$JOB
	write_job "$base.job" bash "$GUEST" link-check "$PAIR_NET.2" &&
		wait_job "$base" "$(vm_pid "$PAIR_A")" 60 >"$PAIR_DIR/check.log" 2>&1
	local rc=$?
	[[ $rc == 0 ]] || touch -- "$base.cancel"
	[[ $rc == 0 && $JOB_RC == 0 ]] && rm -f -- "$base".*
}

pair_start() {
	pair_paths
	lock_state pair.lock
	if [[ $(pair_state) == UP ]]; then
		msg "VM pair already running (pids $(vm_pid "$PAIR_A") and $(vm_pid "$PAIR_B"))"
		return 0
	fi
	pair_kill # leftovers of a crashed start or a dead VM
	rm -rf -- "$PAIR_DIR"
	mkdir -p -- "$PAIR_A/queue" "$PAIR_B/queue" || exit "$EXIT_INFRA"

	local t0=$SECONDS timeout=${WITH_RDMA_BOOT_TIMEOUT:-300} port kver
	port=$(free_tcp_port) || pair_fail "no free TCP port for the link"
	trap 'pair_kill; rm -rf -- "$PAIR_DIR"; exit 130' INT
	trap 'pair_kill; rm -rf -- "$PAIR_DIR"; exit 143' TERM HUP
	pair_boot a "listen=127.0.0.1:$port" || pair_fail "cannot start VM a"
	# b connects to a's socket, which a's qemu opens before its guest boots.
	until tcp_listening "$port"; do
		[[ -n $(vm_pid "$PAIR_A") ]] || pair_fail "VM a failed to start (kernel $KERNEL)"
		((SECONDS - t0 < 60)) || pair_fail "VM a does not listen on 127.0.0.1:$port"
		nap 0.2
	done
	pair_boot b "connect=127.0.0.1:$port" || pair_fail "cannot start VM b"
	until [[ -e $PAIR_A/ready && -e $PAIR_B/ready ]]; do
		[[ -e $PAIR_A/failed || -e $PAIR_B/failed ]] && pair_fail "RDMA or link setup inside the pair failed"
		[[ -n $(vm_pid "$PAIR_A") && -n $(vm_pid "$PAIR_B") ]] ||
			pair_fail "a VM of the pair failed to boot (kernel $KERNEL)"
		((SECONDS - t0 <= timeout)) || pair_fail "VM pair not ready after ${timeout}s"
		nap 0.2
	done
	pair_check || pair_fail "a cannot ping b over the link"
	read -r kver <"$PAIR_A/ready"
	printf '%s\n' "$kver" >"$PAIR_DIR/ready"
	trap - INT TERM HUP
	msg "VM pair up (pids $(vm_pid "$PAIR_A") and $(vm_pid "$PAIR_B"); $LINK_DEV on a link" \
		"$PAIR_NET.1 <-> $PAIR_NET.2; kernel $kver) after $((SECONDS - t0))s"
}

pair_stop() {
	pair_paths
	[[ -d $PAIR_DIR ]] || return 0
	lock_state pair.lock
	local d pid i
	for d in "$PAIR_A" "$PAIR_B"; do
		[[ -n $(vm_pid "$d") ]] && touch -- "$d/queue/stop" # the agents exit, the guests power off
	done
	for d in "$PAIR_A" "$PAIR_B"; do
		pid=$(vm_pid "$d")
		for ((i = 0; i < 150; i++)); do
			pid_alive "$pid" || break
			nap 0.1
		done
		kill_group "$pid"
	done
	rm -rf -- "$PAIR_DIR"
	msg "VM pair stopped"
}

pair_status() {
	pair_paths
	case $(pair_state) in
	UP)
		local kver
		read -r kver <"$PAIR_DIR/ready"
		echo "$ME: VM pair up (pids $(vm_pid "$PAIR_A") and $(vm_pid "$PAIR_B"), $LINK_DEV on" \
			"$PAIR_NET.1 <-> $PAIR_NET.2, kernel $kver, state $PAIR_DIR)"
		;;
	STARTING) echo "$ME: VM pair starting (state $PAIR_DIR)" ;;
	*)
		echo "$ME: VM pair not running (state $PAIR_DIR)"
		return 3
		;;
	esac
}

# run_pair CMD [ARGS...]: run CMD in VM a of the pair, booting a pair for it (and
# stopping it afterwards) if none is up.
run_pair() {
	pair_paths
	mkdir -p -- "$WR_DIR" || exit "$EXIT_INFRA"
	if [[ $(pair_state) != UP ]]; then
		lock_state pair.lock # wait for a start in progress
		exec 9>&-
	fi
	local where="vm pair (a: $LINK_DEV on $PAIR_NET.1, peer b: $PAIR_NET.2"
	if [[ $(pair_state) == UP ]]; then
		check_kernel "$PAIR_DIR/ready" "VM pair"
		local kver=
		read -r kver <"$PAIR_DIR/ready"
		run_in "$PAIR_A" "VM a of the pair" "$where, kernel ${kver:-?})" "$@"
	fi
	vm_asked "a pair of VMs"
	pair_start
	exec 9>&-
	trap 'pair_stop; exit 130' INT
	trap 'pair_stop; exit 143' TERM HUP
	(run_in "$PAIR_A" "VM a of the pair" "$where, one-off)" "$@")
	local rc=$?
	trap - INT TERM HUP
	pair_stop
	exit "$rc"
}
