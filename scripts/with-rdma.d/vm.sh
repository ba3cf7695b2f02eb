# shellcheck shell=bash
# with-rdma, host side: the life cycle of one VM (a virtme-ng guest: kernel, boot, pid
# and state files, stopping, logs) and the shared VM's commands --vm-start, --vm-stop and
# --vm-status. Sourced by scripts/with-rdma after common.sh.

# POSIX-sh single quoting (vng runs --exec through a shell that may not be bash).
shq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

init_paths() {
	TARGET=${CARGO_TARGET_DIR:-$REPO_ROOT/target}
	[[ $TARGET == /* ]] || TARGET=$PWD/$TARGET
	WR_DIR=$TARGET/with-rdma
	VM_DIR=$WR_DIR/vm
	QUEUE=$VM_DIR/queue
	JOBS_DIR=$WR_DIR/jobs
}

# proc_start PID: start time of the process (field 22 of /proc/PID/stat); stored next
# to the VM's pid so that a recycled pid is not mistaken for the VM.
proc_start() {
	local stat
	local -a f
	read -r stat <"/proc/$1/stat" 2>/dev/null || return 1
	read -r -a f <<<"${stat##*) }"
	printf '%s' "${f[19]}"
}

# vm_pid [DIR]: pid of the vng process of the VM whose state is in DIR (default: the
# shared VM's) if it is still running, else nothing.
vm_pid() {
	local dir=${1:-$VM_DIR} pid='' start='' arg
	local -a argv
	[[ -r $dir/pid ]] && read -r pid start <"$dir/pid"
	pid_alive "$pid" || return 0
	if [[ -n $start ]]; then
		[[ $(proc_start "$pid") == "$start" ]] && printf '%s' "$pid"
		return 0
	fi
	# pid file without a start time (older format): accept it if it still runs vng
	mapfile -d '' argv <"/proc/$pid/cmdline" 2>/dev/null
	for arg in "${argv[@]}"; do
		if [[ $arg == vng || $arg == */vng ]]; then
			printf '%s' "$pid"
			return 0
		fi
	done
}

# vm_state [DIR]: UP (pid alive + ready), STARTING (pid alive, not ready yet) or DOWN.
vm_state() {
	local dir=${1:-$VM_DIR} pid
	pid=$(vm_pid "$dir")
	if [[ -z $pid ]]; then
		echo DOWN
	elif [[ -e $dir/ready ]]; then
		echo UP
	elif [[ -e $dir/failed ]]; then
		echo DOWN
	else
		echo STARTING
	fi
}

# The guest kernels: the host's /boot/vmlinuz-* (Debian bookworm's 6.1 on these machines)
# and those scripts/fetch-kernel unpacked under KERNEL_CACHE (<release>/usr/lib/modules/
# <release>/vmlinuz, beside its modules, which vng finds there).
KERNEL_CACHE=${WITH_RDMA_KERNEL_CACHE:-$REPO_ROOT/.cache/kernels}

# kernel_release IMAGE: the release of a kernel image, from its path.
kernel_release() {
	local r=${1%/vmlinuz}
	if [[ $r != "$1" ]]; then
		printf '%s' "${r##*/}"
	else
		r=${1##*/}
		printf '%s' "${r#vmlinuz-}"
	fi
}

# pick_kernel: sets KERNEL (the image) and KREL (its release) from WITH_RDMA_KERNEL: unset
# or `default`, the newest /boot/vmlinuz-*; `new`, the newest fetched kernel; a release
# prefix (`6.1`, `7.3.4`), the newest kernel of either kind whose release starts so; a
# path, that image.
pick_kernel() {
	local want=${WITH_RDMA_KERNEL:-default} k
	local -a found
	case $want in
	*/*) found=("$want") ;;
	default) found=(/boot/vmlinuz-*) ;;
	new) found=("$KERNEL_CACHE"/*/usr/lib/modules/*/vmlinuz) ;;
	*) found=(/boot/vmlinuz-"$want"* "$KERNEL_CACHE"/*/usr/lib/modules/"$want"*/vmlinuz) ;;
	esac
	KERNEL="" KREL=""
	for k in "${found[@]}"; do
		[[ -r $k ]] || continue
		if [[ -z $KERNEL ]] || [[ $(printf '%s\n%s\n' "$KREL" "$(kernel_release "$k")" |
			sort -V | tail -n1) != "$KREL" ]]; then
			KERNEL=$k
			KREL=$(kernel_release "$k")
		fi
	done
	if [[ -z $KERNEL ]]; then
		err "no kernel image for WITH_RDMA_KERNEL=$want (looked in /boot and $KERNEL_CACHE;" \
			"scripts/install-deps fetches the newer one)"
		return 1
	fi
}

# start_vng LOG EXEC_STRING [VNG_ARGS...]: boot a VM in its own session (so it can be
# killed as a group: vng -> sh -> virtme-run -> qemu) with the target dir shared
# read-write. Sets VNG_PID. vng output (and the kernel console with WITH_RDMA_DEBUG) goes
# to LOG through a pipe: qemu reopens /proc/self/fd/{1,2} with O_TRUNC, which would
# clobber a regular file shared by both.
start_vng() {
	local log=$1 exec_str=$2 vng=${WITH_RDMA_VNG:-}
	shift 2
	if [[ -z $vng ]]; then
		vng=$(command -v vng) || {
			err "vng (virtme-ng) not found in PATH (set WITH_RDMA_VNG)"
			return 1
		}
	fi
	pick_kernel || return 1
	local -a args=(--run "$KERNEL" --user root
		--memory "${WITH_RDMA_VM_MEMORY:-2G}" --cpus "${WITH_RDMA_VM_CPUS:-2}"
		--disable-kvm --rwdir "$TARGET" --cwd "$PWD" --exec "$exec_str" "$@")
	[[ ${WITH_RDMA_DEBUG:-} == 1 ]] && args+=(--verbose)
	: >"$log"
	# fd 9 is the start/stop lock: the VM must not inherit it.
	setsid "$vng" "${args[@]}" </dev/null 9>&- \
		> >(cat >>"$log" 2>/dev/null 9>&-; : >"$log.done") 2>&1 &
	VNG_PID=$!
}

# show_vng_log TITLE LOG: show a start_vng log once its writer has drained it.
show_vng_log() {
	local i
	for ((i = 0; i < 30; i++)); do
		[[ -e $2.done ]] && break
		nap 0.1
	done
	show_log "$1" "$2"
}

# kill_group PID: stop a VM started by start_vng.
kill_group() {
	local pid=$1 i
	pid_alive "$pid" || return 0
	kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 50; i++)); do
		pid_alive "$pid" || return 0
		nap 0.1
	done
	kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
}

show_log() { # show_log TITLE FILE [LINES]
	[[ -s $2 ]] || return 0
	msg "---- $1 ($2, last ${3:-40} lines) ----"
	tail -n "${3:-40}" -- "$2" >&2
}


# ---------------------------------------------------------------- the shared VM

# lock_state [NAME]: take the start/stop lock NAME (default vm.lock) on fd 9.
lock_state() {
	mkdir -p -- "$WR_DIR" || exit "$EXIT_INFRA"
	exec 9>"$WR_DIR/${1:-vm.lock}"
	flock 9
}

vm_start() {
	init_paths
	lock_state
	local state pid
	state=$(vm_state)
	pid=$(vm_pid)
	if [[ $state == UP ]]; then
		msg "shared VM already running (pid $pid)"
		return 0
	fi
	# Not up: a leftover from a crashed start or a dead VM. Clean it up.
	[[ -n $pid ]] && kill_group "$pid"
	rm -rf -- "$VM_DIR"
	mkdir -p -- "$QUEUE" || exit "$EXIT_INFRA"

	local t0=$SECONDS timeout=${WITH_RDMA_BOOT_TIMEOUT:-300} attempt
	# A VM whose qemu died before its guest said anything (seen once in CI, right after the
	# previous VM stopped, with an empty log) is booted once more.
	for attempt in 1 2; do
		start_vng "$VM_DIR/vng.log" "bash $(shq "$GUEST") agent $(shq "$VM_DIR")" || exit "$EXIT_INFRA"
		pid=$VNG_PID
		printf '%s %s\n' "$pid" "$(proc_start "$pid")" >"$VM_DIR/pid.tmp" &&
			mv -f -- "$VM_DIR/pid.tmp" "$VM_DIR/pid"
		trap 'kill_group "$pid"; rm -rf -- "$VM_DIR"; exit 130' INT
		trap 'kill_group "$pid"; rm -rf -- "$VM_DIR"; exit 143' TERM HUP

		while :; do
			if [[ -e $VM_DIR/ready ]]; then
				local kver
				read -r kver <"$VM_DIR/ready"
				trap - INT TERM HUP
				msg "shared VM up (pid $pid, rxe0 on lo, kernel $kver) after $((SECONDS - t0))s"
				return 0
			fi
			if [[ -e $VM_DIR/failed ]] || ! pid_alive "$pid" || ((SECONDS - t0 > timeout)); then
				break
			fi
			nap 0.2
		done
		[[ $attempt == 1 && ! -e $VM_DIR/failed && ! -s $VM_DIR/vng.log ]] && ! pid_alive "$pid" ||
			break
		msg "shared VM died while booting, with nothing in its log: booting it again"
	done
	trap - INT TERM HUP
	if [[ -e $VM_DIR/failed ]]; then
		err "RDMA setup inside the shared VM failed"
	elif pid_alive "$pid"; then
		err "shared VM not ready after ${timeout}s"
	else
		err "shared VM failed to boot (kernel $KERNEL)"
	fi
	kill_group "$pid"
	show_log "agent log" "$VM_DIR/agent.log"
	show_vng_log "vng output" "$VM_DIR/vng.log"
	[[ -e $VM_DIR/failed || ${WITH_RDMA_DEBUG:-} == 1 ]] ||
		msg "hint: WITH_RDMA_DEBUG=1 captures the guest kernel console"
	cat -- "$VM_DIR/agent.log" "$VM_DIR/vng.log" >"$WR_DIR/last-failure.log" 2>/dev/null &&
		msg "full log: $WR_DIR/last-failure.log"
	rm -rf -- "$VM_DIR"
	exit "$EXIT_INFRA"
}

vm_stop() {
	init_paths
	[[ -d $VM_DIR ]] || return 0
	lock_state
	local pid i
	pid=$(vm_pid)
	if pid_alive "$pid"; then
		touch -- "$QUEUE/stop" # the agent exits, and the guest powers off
		for ((i = 0; i < 150; i++)); do
			pid_alive "$pid" || break
			nap 0.1
		done
		kill_group "$pid"
	fi
	rm -rf -- "$VM_DIR"
	msg "shared VM stopped"
}

vm_status() {
	init_paths
	local state pid kver=
	state=$(vm_state)
	pid=$(vm_pid)
	case $state in
	UP)
		read -r kver <"$VM_DIR/ready"
		echo "$ME: shared VM up (pid $pid, rxe0 on lo, kernel $kver, state $VM_DIR)"
		;;
	STARTING) echo "$ME: shared VM starting (pid $pid, state $VM_DIR)" ;;
	*)
		echo "$ME: shared VM not running (state $VM_DIR)"
		return 3
		;;
	esac
}
