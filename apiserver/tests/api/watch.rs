//! Watches through the kube client: events, selector transitions, bookmarks, 410 Gone and relists.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use wasm_reconciler_apiserver::ApiServer;

use crate::support::{client, in_process};

fn config_map(name: &str, tier: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {"tier": tier}}})).unwrap()
}

async fn next_event(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin),
) -> WatchEvent<ConfigMap> {
    tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("event in time")
        .expect("stream open")
        .expect("no error")
}

#[tokio::test]
async fn watch_from_resource_version_sees_changes_and_selector_transitions() {
    let (_server, client) = in_process().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &config_map("before", "web"))
        .await
        .unwrap();
    let list = api.list(&ListParams::default()).await.unwrap();
    let version = list.metadata.resource_version.unwrap();
    let mut stream = api
        .watch(&WatchParams::default().labels("tier=web"), &version)
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &config_map("a", "web"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &config_map("b", "db"))
        .await
        .unwrap();
    match next_event(&mut stream).await {
        WatchEvent::Added(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("a")),
        other => panic!("expected ADDED a, got {other:?}"),
    }
    api.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"tier": "web"}}})),
    )
    .await
    .unwrap();
    match next_event(&mut stream).await {
        WatchEvent::Added(cm) => assert_eq!(
            cm.metadata.name.as_deref(),
            Some("b"),
            "entering the selection is ADDED"
        ),
        other => panic!("expected ADDED b, got {other:?}"),
    }
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"tier": "db"}}})),
    )
    .await
    .unwrap();
    match next_event(&mut stream).await {
        WatchEvent::Deleted(cm) => assert_eq!(
            cm.metadata.name.as_deref(),
            Some("a"),
            "leaving the selection is DELETED"
        ),
        other => panic!("expected DELETED a, got {other:?}"),
    }
    api.delete("b", &DeleteParams::default()).await.unwrap();
    match next_event(&mut stream).await {
        WatchEvent::Deleted(cm) => {
            assert_eq!(cm.metadata.name.as_deref(), Some("b"));
            let deleted_at: u64 = cm.metadata.resource_version.unwrap().parse().unwrap();
            assert!(deleted_at > version.parse::<u64>().unwrap());
        }
        other => panic!("expected DELETED b, got {other:?}"),
    }
}

#[tokio::test]
async fn bookmarks_arrive_and_old_versions_expire() {
    let server = ApiServer::builder()
        .watch_history(3)
        .bookmark_interval(Duration::from_millis(100))
        .build()
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(client(&server));
    let start = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = api.watch(&WatchParams::default(), &start).await.unwrap().boxed();
    api.create(&PostParams::default(), &config_map("x", "web"))
        .await
        .unwrap();
    assert!(matches!(next_event(&mut stream).await, WatchEvent::Added(_)));
    match next_event(&mut stream).await {
        WatchEvent::Bookmark(bookmark) => {
            assert_eq!(
                bookmark.metadata.resource_version,
                server.resource_version().to_string()
            );
        }
        other => panic!("expected a bookmark, got {other:?}"),
    }
    for name in ["y", "z", "w", "v"] {
        api.create(&PostParams::default(), &config_map(name, "web"))
            .await
            .unwrap();
    }
    let mut expired = api.watch(&WatchParams::default(), &start).await.unwrap().boxed();
    match next_event(&mut expired).await {
        WatchEvent::Error(status) => {
            assert_eq!(status.code, 410);
            assert_eq!(status.reason, "Expired");
            assert!(
                status.message.starts_with("too old resource version"),
                "{}",
                status.message
            );
        }
        other => panic!("expected 410, got {other:?}"),
    }
}

#[tokio::test]
async fn watcher_relists_after_expiry_and_dropped_streams() {
    let (server, client) = in_process().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &config_map("first", "web"))
        .await
        .unwrap();
    let mut objects = watcher(api.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let seen = |cm: &ConfigMap| cm.metadata.name.clone().unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), objects.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(seen(&first), "first");
    server.faults().expire_watches();
    api.create(&PostParams::default(), &config_map("second", "web"))
        .await
        .unwrap();
    let mut names = Vec::new();
    let mut saw_gone = false;
    while !names.contains(&"second".to_string()) {
        match tokio::time::timeout(Duration::from_secs(10), objects.next())
            .await
            .expect("watcher recovers after 410")
            .expect("stream continues")
        {
            Ok(next) => names.push(seen(&next)),
            Err(error) => {
                saw_gone |= error.to_string().contains("410") || format!("{error:?}").contains("Expired");
            }
        }
    }
    assert!(saw_gone, "the watcher saw 410 Gone and relisted");
    server.faults().drop_watches();
    api.create(&PostParams::default(), &config_map("third", "web"))
        .await
        .unwrap();
    loop {
        let next = tokio::time::timeout(Duration::from_secs(10), objects.next())
            .await
            .expect("watcher recovers after a dropped stream")
            .expect("stream continues");
        if next.is_ok_and(|n| seen(&n) == "third") {
            break;
        }
    }
}

#[tokio::test]
async fn streaming_list_sends_initial_events_then_bookmark() {
    let (_server, client) = in_process().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &config_map("one", "web"))
        .await
        .unwrap();
    let mut objects = watcher(
        api.clone(),
        watcher::Config::default().labels("tier=web").streaming_lists(),
    )
    .applied_objects()
    .boxed();
    let first = tokio::time::timeout(Duration::from_secs(5), objects.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.metadata.name.as_deref(), Some("one"));
    api.create(&PostParams::default(), &config_map("two", "web"))
        .await
        .unwrap();
    let second = tokio::time::timeout(Duration::from_secs(5), objects.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(second.metadata.name.as_deref(), Some("two"));
}
