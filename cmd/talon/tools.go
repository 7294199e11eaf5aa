package main

import (
	"errors"
	"slices"

	"github.com/spf13/cobra"

	"talon/internal/config"
	"talon/internal/plugin"
	"talon/internal/policy"
	"talon/internal/tools"
	"talon/internal/tools/core"
)

func newToolsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "tools", Short: "Inspect which tools agents get"}
	var (
		cfgPath, agent, sessionKey, provider, model string
		channel, sender                             string
		sandboxed, owner, asJSON                    bool
		pluginTools                                 []string
	)
	explain := &cobra.Command{
		Use:   "explain",
		Short: "Show every candidate tool: available, removed by which layer and key, or not built in Talon",
		Long: `Evaluates the tool policy for one run of one agent and prints a table of every
candidate tool: available, removed by which layer and which config key, or "not built
in Talon". Below it, the steps that applied and the likely mistakes, each with a
one-line fix.

The candidates are OpenClaw's tool catalog (§1.3 of the tool-policy spec). A catalog
tool Talon does not have is "not built in Talon" whatever the policy says: never
available, and no fix adds it. Available tools are exactly those a model is offered.
TOKENS is what each core tool costs in every model request (o200k_base), "-" for the
others. This command loads no plugins: Talon's built tools are its core tools and
memory-core's; declare other plugin tools with --plugin-tool
NAME=PLUGIN[,optional][,origin=...] (origin defaults to bundled, whose plugins are
off until enabled).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (agent == "") == (sessionKey == "") {
				return errors.New("tools explain: pass exactly one of --agent ID or --session-key KEY")
			}
			if (provider == "") != (model == "") && model != "" {
				return errors.New("tools explain: --model needs --provider")
			}
			f, err := loadConfig(cfgPath)
			if err != nil {
				return err
			}
			regs, err := parsePluginTools(pluginTools)
			if err != nil {
				return err
			}
			snd, err := parseSender(sender)
			if err != nil {
				return err
			}
			ctx := policy.Context{
				SessionKey: sessionKey, ModelProvider: provider, ModelID: model,
				MessageProvider: channel, Sender: snd, SenderIsOwner: owner, Plugins: regs,
			}
			if agent != "" {
				id := config.NormalizeAgentID(agent)
				ctx.AgentID = id
				ctx.SessionKey = policy.MainSessionKey(f.Config, id)
			}
			if cmd.Flags().Changed("sandboxed") {
				ctx.Sandboxed = &sandboxed
			}
			reg, built, err := builtTools()
			if err != nil {
				return err
			}
			x := policy.Explain(f.Config, ctx, policy.CandidateTools(f.Config), policy.Inventory{Built: built})
			tools.PriceExplanation(&x, reg)
			return printReport(cmd.OutOrStdout(), asJSON, &x)
		},
	}
	fl := explain.Flags()
	fl.StringVar(&cfgPath, "config", "", "config file (default: talon.json, openclaw.json or clawdbot.json in the working directory)")
	fl.StringVar(&agent, "agent", "", "agent id; explains its main session")
	fl.StringVar(&sessionKey, "session-key", "", "session key, e.g. agent:work:whatsapp:group:123")
	fl.StringVar(&provider, "provider", "", "model provider, e.g. openai (selects byProvider policies)")
	fl.StringVar(&model, "model", "", "model id, e.g. gpt-5.2")
	fl.BoolVar(&sandboxed, "sandboxed", false, "treat the session as sandboxed (default: resolved from the config)")
	fl.StringVar(&channel, "channel", "", "message channel (provider), e.g. whatsapp; default: from the session key")
	fl.StringVar(&sender, "sender", "", "sender for toolsBySender: id:X, e164:+1555…, username:@x or name:X")
	fl.BoolVar(&owner, "owner", false, "the sender is an owner (keeps owner-only tools)")
	fl.BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	fl.StringArrayVar(&pluginTools, "plugin-tool", nil, "a plugin tool: NAME=PLUGIN[,optional][,origin=ORIGIN] (repeatable)")
	cmd.AddCommand(explain)
	return cmd
}

// builtTools is what this binary has of OpenClaw's catalog, offline: the
// core registry (which also prices the explanation), and memory-core's
// tools when that plugin is compiled in. Other plugin tools are what
// --plugin-tool declares.
func builtTools() (*tools.Registry, []string, error) {
	reg, err := core.Registry()
	if err != nil {
		return nil, nil, err
	}
	built := reg.Names()
	if slices.ContainsFunc(plugin.Modules(), func(m plugin.Module) bool { return m.ID == policy.MemoryPlugin }) {
		built = append(built, policy.MemoryTools...)
	}
	return reg, built, nil
}
