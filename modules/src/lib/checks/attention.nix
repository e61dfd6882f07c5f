# The checks of the settings of attention states: silence, and how a
# session limited by its account's usage limit resumes (the supervisor
# refuses the same: attention.SilenceAfter, supervisor.LimitsFromEnv).
{
  prim,
  formats,
  contract,
  ...
}:
let
  inherit (prim) noNewline show;
  prefix = "services.agent-box";
  silence = contract.attention.silenceAfter;
  silenceChecks = a: [
    {
      assertion =
        let
          s = formats.durationSeconds a.silenceAfter;
        in
        a.silenceAfter == null
        || (s != null && s >= formats.durationSeconds silence.min && s <= formats.durationSeconds silence.max);
      message = "${prefix}.attention.silenceAfter = ${show a.silenceAfter}: use a Go duration from ${silence.min} to ${silence.max}, such as \"30s\", or null (silence not watched).";
    }
  ];

  usageLimitChecks =
    u:
    let
      first = formats.durationSeconds u.firstWait;
      longest = formats.durationSeconds u.maxWait;
    in
    [
      {
        assertion = first != null && first > 0;
        message = "${prefix}.usageLimits.firstWait = ${show u.firstWait}: use a positive Go duration such as \"30m\".";
      }
      {
        assertion = longest != null && (first == null || longest >= first);
        message = "${prefix}.usageLimits.maxWait = ${show u.maxWait}: use a Go duration such as \"2h\", at least firstWait (${u.firstWait}).";
      }
      {
        assertion = u.growth >= 1 && u.perMinute >= 1;
        message = "${prefix}.usageLimits: growth (${toString u.growth}) and perMinute (${toString u.perMinute}) must be at least 1.";
      }
      {
        assertion = u.resumePrompt != "" && noNewline u.resumePrompt && builtins.stringLength u.resumePrompt <= contract.conversations.promptMaxBytes;
        message = "${prefix}.usageLimits.resumePrompt: use one line of at most ${toString contract.conversations.promptMaxBytes} bytes.";
      }
    ];
in
# n: the normalized options
n: silenceChecks n.attention ++ usageLimitChecks n.usageLimits
