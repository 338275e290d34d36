//! `wasm-reconciler plugin check` on the `dnsrecord` example plugin against a real PowerDNS: the check needs no API
//! server (it runs the embedded one's rules in memory), so it runs once, in the embedded pass. Every world the check
//! builds is deleted at its end through the plugin's finalizer, so the zone ends as it began.

use clap::Parser as _;
use serde_json::Value;
use wasm_reconciler::cli::{Cli, Command, PluginCommand, plugin_check};

use crate::powerdns::PowerDns;

const ZONE: &str = "example.org.";

fn checkout() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[tokio::test(flavor = "multi_thread")]
async fn check_passes_the_dnsrecord_plugin_against_powerdns_and_leaves_the_zone_clean() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let api_key = "check-key-2f9c";
    let powerdns = PowerDns::start(&dir.path().join("powerdns"), api_key).await?;
    powerdns.create_zone(ZONE).await?;
    let (_, zone_before) = powerdns
        .api("GET", "/api/v1/servers/localhost/zones/example.org.", None)
        .await?;

    let config = dir.path().join("config.yaml");
    std::fs::write(&config, format!("server: {}\n", powerdns.url()))?;
    let settings = dir.path().join("settings.yaml");
    std::fs::write(&settings, format!("allowedOutboundHosts: [\"{}\"]\n", powerdns.url()))?;
    let plugin = checkout().join("plugins/dnsrecord");
    let cli = Cli::try_parse_from([
        "wasm-reconciler".into(),
        "plugin".into(),
        "check".into(),
        wasm_reconciler_artifacts::DNSRECORD.into(),
        "--crd".into(),
        plugin.join("crd.yaml").display().to_string(),
        "--world".into(),
        plugin.join("fixtures").display().to_string(),
        "--config".into(),
        config.display().to_string(),
        "--settings".into(),
        settings.display().to_string(),
        "--variable".into(),
        format!("pdns_api_key={api_key}"),
    ])?;
    let Command::Plugin(PluginCommand::Check(args)) = cli.command else {
        anyhow::bail!("`plugin check` parses as another command");
    };
    let report = tokio::task::spawn_blocking(move || plugin_check(&args)).await??;
    assert!(
        report.findings.is_empty(),
        "dnsrecord has findings:\n{}",
        report.text("dnsrecord.wasm")
    );
    assert_eq!(report.fixtures.len(), 4);
    let mutated: Vec<_> = report
        .fixtures
        .iter()
        .filter(|f| f.mutation_skipped.is_none())
        .collect();
    assert_eq!(mutated.len(), 3, "the deleting fixture is not mutated");
    for fixture in mutated {
        assert!(
            fixture.single_sequences >= 5 && fixture.invalid_specs >= 3,
            "{fixture:?}"
        );
        assert!(
            fixture.rejected_steps > 0,
            "PowerDNS refuses some generated records: {fixture:?}"
        );
    }

    // Every record set the check wrote was deleted by the finalizer of its world.
    let (status, zone_after) = powerdns
        .api("GET", "/api/v1/servers/localhost/zones/example.org.", None)
        .await?;
    assert_eq!(status, 200);
    let sets = |zone: &Value| {
        let mut sets: Vec<String> = zone["rrsets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|set| {
                format!(
                    "{} {}",
                    set["name"].as_str().unwrap_or_default(),
                    set["type"].as_str().unwrap_or_default()
                )
            })
            .collect();
        sets.sort();
        sets
    };
    assert_eq!(sets(&zone_after), sets(&zone_before));
    Ok(())
}
