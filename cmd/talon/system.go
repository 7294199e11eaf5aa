package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"talon/internal/automation"
)

// `talon system …` is OpenClaw's system CLI: a system event for a
// session's next turn, the last heartbeat, and heartbeats on or off.

func newSystemCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "system",
		Short: "Queue a system event, or read the last heartbeat, on the running gateway",
	}
	hb := &cobra.Command{Use: "heartbeat", Short: "Read, or turn on and off, the running gateway's heartbeats"}
	hb.AddCommand(newHeartbeatLastCmd(), newHeartbeatSwitchCmd(true), newHeartbeatSwitchCmd(false))
	cmd.AddCommand(newSystemEventCmd(), hb)
	return cmd
}

func newSystemEventCmd() *cobra.Command {
	var f callFlags
	var text, mode, sessionKey string
	cmd := &cobra.Command{
		Use:   "event",
		Short: "Queue a system event for a session's next turn (--mode now: start that turn now)",
		Long: `event queues --text as a system event on the default agent's main session (or
--session-key's): the session's next turn sees it as a "System:" line. With --mode
next-heartbeat (the default) that is the next heartbeat or message; with --mode now the
gateway wakes the session at once (the wake method). It prints ok, or with --json the
gateway's answer.

` + cronConnHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(text) == "" {
				return errors.New("system event: --text is required")
			}
			method, p := "system-event", map[string]string{"text": text}
			switch mode {
			case automation.WakeNextHeartbeat:
			case automation.WakeNow:
				method, p["mode"] = "wake", automation.WakeNow
			default:
				return fmt.Errorf("system event: --mode %q: want now or next-heartbeat", mode)
			}
			if k := strings.TrimSpace(sessionKey); k != "" {
				p["sessionKey"] = k
			}
			raw, err := callGateway(cmd, f, method, p)
			if err != nil {
				return err
			}
			if f.asJSON {
				return printPayload(cmd.OutOrStdout(), raw)
			}
			fmt.Fprintln(cmd.OutOrStdout(), "ok")
			return nil
		},
	}
	gatewayFlags(cmd, &f)
	fl := cmd.Flags()
	fl.StringVar(&text, "text", "", "the event's text (required)")
	fl.StringVar(&mode, "mode", automation.WakeNextHeartbeat, "now or next-heartbeat")
	fl.StringVar(&sessionKey, "session-key", "", "the session (default: the default agent's main session)")
	fl.BoolVar(&f.asJSON, "json", false, "print the gateway's answer as JSON")
	return cmd
}

func newHeartbeatLastCmd() *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "last",
		Short: "Print the last heartbeat event as JSON (null when there was none)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return printCall(cmd, f, "last-heartbeat", nil) },
	}
	gatewayFlags(cmd, &f)
	cmd.Flags().Bool("json", true, "print JSON (always; accepted for OpenClaw's spelling)")
	return cmd
}

// newHeartbeatSwitchCmd is `heartbeat enable` or `heartbeat disable`:
// set-heartbeats for the tenant the token is of, until the gateway
// restarts (it is not a config change).
func newHeartbeatSwitchCmd(on bool) *cobra.Command {
	var f callFlags
	use, short := "disable", "Stop the tenant's heartbeats until enabled again or the gateway restarts"
	if on {
		use, short = "enable", "Let the tenant's heartbeats run again"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + ` (set-heartbeats; needs operator.admin). The heartbeat blocks of the config stay as they are.

` + cronConnHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := callGateway(cmd, f, "set-heartbeats", map[string]bool{"enabled": on})
			if err != nil {
				return err
			}
			if f.asJSON {
				return printPayload(cmd.OutOrStdout(), raw)
			}
			fmt.Fprintln(cmd.OutOrStdout(), "heartbeats "+use+"d")
			return nil
		},
	}
	gatewayFlags(cmd, &f)
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the gateway's answer as JSON")
	return cmd
}
