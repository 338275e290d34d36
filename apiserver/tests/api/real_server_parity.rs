//! Answers aligned with kube-apiserver v1.37 after the differential suite (`tests/all/differential/`) found them
//! different: raw requests through the kube client, checked against what the real server answers.

use std::time::Duration;

use futures::{AsyncBufReadExt, StreamExt};
use kube::Client;
use serde_json::{Value, json};
use wasm_reconciler_apiserver::ApiServer;

use crate::support::{client, eventually};

/// One answer: status code, content type, warnings and body (JSON, or the text when it is not JSON).
struct Answer {
    code: u16,
    content_type: String,
    warnings: Vec<String>,
    body: Value,
}

async fn send(client: &Client, method: &str, path: &str, content_type: &str, body: &[u8]) -> Answer {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::CONTENT_TYPE, content_type)
        .header(http::header::ACCEPT, "application/json")
        .body(kube::client::Body::from(body.to_vec()))
        .unwrap();
    let response = client.send(request).await.unwrap();
    let header = |name: http::header::HeaderName| -> Vec<String> {
        response
            .headers()
            .get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap().to_string())
            .collect()
    };
    let content_type = header(http::header::CONTENT_TYPE).join(",");
    let warnings = header(http::header::WARNING);
    let code = response.status().as_u16();
    let bytes = response.into_body().collect_bytes().await.unwrap();
    let body =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    Answer {
        code,
        content_type,
        warnings,
        body,
    }
}

async fn get(client: &Client, path: &str) -> Answer {
    send(client, "GET", path, "application/json", b"").await
}

async fn post(client: &Client, path: &str, body: Value) -> Answer {
    send(client, "POST", path, "application/json", body.to_string().as_bytes()).await
}

async fn server() -> (ApiServer, Client) {
    let server = ApiServer::builder().build().await.expect("server builds");
    let client = client(&server);
    crate::support::settled(&client).await;
    (server, client)
}

const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}})
}

#[tokio::test]
async fn patch_bodies_are_refused_like_the_real_server() {
    let (_server, client) = server().await;
    post(&client, DEPLOYMENTS, deployment("web")).await;
    let path = format!("{DEPLOYMENTS}/web");
    let cases = [
        (
            "application/merge-patch+json",
            r#"{"spec": {"#,
            400,
            "invalid JSON patch",
        ),
        (
            "application/json-patch+json",
            r#"{"op": "replace"}"#,
            400,
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
        ),
        (
            "application/merge-patch+json",
            r#""text""#,
            400,
            "error decoding patch: json: cannot unmarshal string into Go value of type map[string]interface {}",
        ),
        (
            "application/strategic-merge-patch+json",
            "[1]",
            400,
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        ("text/plain", "replicas=1", 415, "415: Unsupported Media Type"),
    ];
    for (content_type, body, code, message) in cases {
        let answer = send(&client, "PATCH", &path, content_type, body.as_bytes()).await;
        assert_eq!(
            (answer.code, answer.body["message"].as_str()),
            (code, Some(message)),
            "{content_type} {body}"
        );
    }
    let failed_test = send(
        &client,
        "PATCH",
        &path,
        "application/json-patch+json",
        br#"[{"op": "test", "path": "/spec/replicas", "value": 9}]"#,
    )
    .await;
    assert_eq!((failed_test.code, &failed_test.body["details"]), (422, &json!({})));
    let wrong_type = send(
        &client,
        "PATCH",
        &path,
        "application/merge-patch+json",
        br#"{"spec": {"replicas": "many"}}"#,
    )
    .await;
    assert_eq!(wrong_type.code, 422);
    assert_eq!(wrong_type.body["details"]["causes"][0]["field"], "patch");
    assert!(
        wrong_type.body["message"]
            .as_str()
            .unwrap()
            .ends_with("json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32")
    );
}

#[tokio::test]
async fn bodies_and_options_are_decoded_like_the_real_server() {
    let (_server, client) = server().await;
    let malformed = send(&client, "POST", CONFIG_MAPS, "application/json", br#"{"kind": "#).await;
    assert_eq!(
        malformed.body["message"],
        r#"the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({"kind": )"#
    );
    let secret = post(
        &client,
        CONFIG_MAPS,
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
    )
    .await;
    assert_eq!(
        secret.body["message"],
        r#"Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion"#
    );
    let annotation = post(
        &client,
        CONFIG_MAPS,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "annotations": {"a": true}}}),
    )
    .await;
    assert_eq!(
        (annotation.code, annotation.body["message"].as_str()),
        (
            400,
            Some(
                r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.annotations of type string"#
            )
        )
    );
    let dry_run = post(
        &client,
        &format!("{CONFIG_MAPS}?dryRun=Some"),
        json!({"metadata": {"name": "x"}}),
    )
    .await;
    assert_eq!(
        (dry_run.code, dry_run.body["message"].as_str()),
        (
            422,
            Some(
                r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All""#
            )
        )
    );
    assert!(dry_run.body["details"].get("name").is_none());
    let unknown = post(
        &client,
        CONFIG_MAPS,
        json!({"metadata": {"name": "warned"}, "color": "blue"}),
    )
    .await;
    assert_eq!(unknown.warnings, [r#"299 - "unknown field \"color\"""#]);
    assert!(
        unknown.body.get("color").is_none(),
        "unknown fields of built-in kinds are dropped"
    );
    let strict = post(
        &client,
        &format!("{CONFIG_MAPS}?fieldValidation=Strict"),
        json!({"metadata": {"name": "strict"}, "color": "blue"}),
    )
    .await;
    assert_eq!(
        strict.body["message"],
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "color""#
    );
}

#[tokio::test]
async fn paths_nobody_serves_are_the_muxs_plain_404() {
    let (_server, client) = server().await;
    for path in ["/apis/nothing.example.com/v1/things", "/definitely/not/here"] {
        let answer = get(&client, path).await;
        assert_eq!(
            (answer.code, answer.content_type.as_str(), &answer.body),
            (404, "text/plain; charset=utf-8", &json!("404 page not found\n")),
            "{path}"
        );
    }
    let unknown_version = get(&client, "/apis/apps/v9/deployments").await;
    assert_eq!(
        (unknown_version.code, &unknown_version.body["kind"]),
        (404, &json!("Status"))
    );
}

#[tokio::test]
async fn built_in_kinds_are_validated_beyond_metadata() {
    let (_server, client) = server().await;
    let key = post(
        &client,
        CONFIG_MAPS,
        json!({"metadata": {"name": "k", "finalizers": ["nodomain"]}, "data": {"bad/key": "x"}}),
    )
    .await;
    let fields: Vec<&str> = key.body["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["metadata.finalizers[0]", "data[bad/key]"]);
    let mut broken = deployment("broken");
    broken["spec"]["replicas"] = json!(-1);
    let answer = post(&client, DEPLOYMENTS, broken).await;
    assert_eq!(
        answer.body["message"],
        r#"Deployment.apps "broken" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"#
    );
    let event = post(
        &client,
        "/apis/events.k8s.io/v1/namespaces/default/events",
        json!({"metadata": {"name": "e"}, "reason": "R", "type": "Sideways", "eventTime": "2026-01-02T03:04:05.000000Z",
               "reportingController": "example.com/c", "reportingInstance": "i", "action": "A",
               "regarding": {"kind": "Pod", "namespace": "default", "name": "p"}}),
    )
    .await;
    assert_eq!(
        event.body["message"],
        r#"Event "e" is invalid: type: Invalid value: "": has invalid value: Sideways"#
    );
    let lease = post(
        &client,
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        json!({"metadata": {"name": "l"}, "spec": {"renewTime": "2026-01-02T03:04:05.5Z"}}),
    )
    .await;
    assert_eq!(
        (lease.code, lease.body["message"].as_str()),
        (
            400,
            Some(
                r#"Lease in version "v1" cannot be handled as a Lease: parsing time "2026-01-02T03:04:05.5Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".5Z" as ".000000""#
            )
        )
    );
}

#[tokio::test]
async fn deletion_preconditions_finalizers_and_pods() {
    let (_server, client) = server().await;
    let created = post(
        &client,
        CONFIG_MAPS,
        json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    )
    .await;
    let uid = created.body["metadata"]["uid"].as_str().unwrap().to_string();
    let wrong_uid = send(
        &client,
        "DELETE",
        &format!("{CONFIG_MAPS}/held"),
        "application/json",
        br#"{"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}"#,
    )
    .await;
    assert_eq!(
        wrong_uid.body["message"],
        format!(
            "Operation cannot be fulfilled on ConfigMap \"held\": the UID in the precondition (00000000-0000-0000-0000-000000000000) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
        )
    );
    assert_eq!(wrong_uid.body["details"]["kind"], "ConfigMap");
    send(
        &client,
        "DELETE",
        &format!("{CONFIG_MAPS}/held"),
        "application/json",
        b"",
    )
    .await;
    let late = send(
        &client,
        "PATCH",
        &format!("{CONFIG_MAPS}/held"),
        "application/json-patch+json",
        br#"[{"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/late"}]"#,
    )
    .await;
    assert!(
        late.body["message"]
            .as_str()
            .unwrap()
            .ends_with(r#"found new finalizers []string{"example.com/late"}"#)
    );
    let pod = post(
        &client,
        "/api/v1/namespaces/default/pods",
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
    )
    .await;
    assert_eq!(pod.body["spec"]["serviceAccountName"], "default");
    assert_eq!(pod.body["metadata"]["generation"], 1);
    let owned: Vec<&str> = pod.body["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert!(
        !owned.contains(&"f:priority") && !owned.contains(&"f:volumes"),
        "admission is not the creator's: {owned:?}"
    );
    let deleted = send(
        &client,
        "DELETE",
        "/api/v1/namespaces/default/pods/p",
        "application/json",
        b"",
    )
    .await;
    assert_eq!(deleted.body["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(deleted.body["metadata"]["generation"], 2);
}

#[tokio::test]
async fn custom_resources_need_a_resource_version_to_be_replaced() {
    let (_server, client) = server().await;
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let created = post(&client, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).await;
    assert_eq!(created.body["status"]["storedVersions"], json!(["v1"]));
    assert!(
        created.body["spec"]["versions"][0]["additionalPrinterColumns"][0]
            .get("priority")
            .is_none()
    );
    let path = "/apis/example.com/v1/namespaces/default/gadgets";
    let list = eventually("the gadgets to be served", Duration::from_secs(5), || async {
        let answer = get(&client, path).await;
        (answer.code == 200).then_some(answer)
    })
    .await;
    assert_eq!(list.body["metadata"]["continue"], "");
    let crd = get(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com",
    )
    .await;
    let managers: Vec<(&str, &str)> = crd.body["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["manager"].as_str().unwrap(), m["subresource"].as_str().unwrap_or("")))
        .collect();
    assert!(managers.contains(&("kube-apiserver", "status")), "{managers:?}");
    let gadget =
        json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"size": 1}});
    post(&client, path, gadget.clone()).await;
    let replaced = send(
        &client,
        "PUT",
        &format!("{path}/g"),
        "application/json",
        gadget.to_string().as_bytes(),
    )
    .await;
    assert_eq!(
        (replaced.code, replaced.body["message"].as_str()),
        (
            422,
            Some(
                r#"gadgets.example.com "g" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"#
            )
        )
    );
    let request = http::Request::builder()
        .uri(path)
        .header(http::header::ACCEPT, "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let response = client.send(request).await.unwrap();
    assert_eq!(response.headers()[http::header::CONTENT_TYPE], "application/json");
    let columns: Value = serde_json::from_slice(&response.into_body().collect_bytes().await.unwrap()).unwrap();
    assert_eq!(
        columns["columnDefinitions"][1]["description"],
        "Custom resource definition column (in JSONPath format): .spec.size"
    );
    let discovery = get(&client, "/apis/example.com/v1").await;
    assert_eq!(
        discovery.body["resources"][0]["verbs"],
        json!([
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch"
        ])
    );
}

#[tokio::test]
async fn lists_continue_tokens_and_collections() {
    let (_server, client) = server().await;
    for namespace in ["a", "a-b"] {
        post(&client, "/api/v1/namespaces", json!({"metadata": {"name": namespace}})).await;
        post(
            &client,
            &format!("/api/v1/namespaces/{namespace}/configmaps"),
            json!({"metadata": {"name": "x", "labels": {"listed": "yes"}}}),
        )
        .await;
    }
    let all = get(&client, "/api/v1/configmaps?labelSelector=listed").await;
    let namespaces: Vec<&str> = all.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(namespaces, ["a-b", "a"], "etcd orders `a-b/x` before `a/x`");
    let bad = get(&client, "/api/v1/configmaps?limit=1&continue=%21%21").await;
    assert_eq!(
        bad.body["message"],
        "invalid continue token: continue key is not valid: illegal base64 data at input byte 0"
    );
    let deleted = send(
        &client,
        "DELETE",
        "/api/v1/namespaces/a/configmaps?labelSelector=listed",
        "application/json",
        b"",
    )
    .await;
    assert!(
        deleted.body["items"][0].get("kind").is_none(),
        "list items carry no type"
    );
    let selector = get(&client, "/api/v1/configmaps?labelSelector=a%20in%20b").await;
    assert_eq!(
        selector.body["message"],
        "unable to parse requirement: found 'b' expected: '('"
    );
    let field = get(&client, "/api/v1/configmaps?fieldSelector=data.x%3Dy").await;
    assert_eq!(
        field.body["message"],
        r#""data.x" is not a known field selector: only "metadata.name", "metadata.namespace""#
    );
}

/// The lines a watch sends until the server ends it.
async fn watch_lines(client: &Client, path: &str) -> Vec<Value> {
    let request = http::Request::builder().uri(path).body(Vec::new()).unwrap();
    let mut lines = client.request_stream(request).await.unwrap().lines();
    let mut events = Vec::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(10), lines.next())
        .await
        .expect("the watch ends")
    {
        events.push(serde_json::from_str(&line.unwrap()).unwrap());
    }
    events
}

#[tokio::test]
async fn watches_start_end_and_expire_like_the_real_server() {
    let (_server, client) = server().await;
    let start = get(&client, CONFIG_MAPS).await.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    post(
        &client,
        CONFIG_MAPS,
        json!({"metadata": {"name": "one", "labels": {"watched": "yes"}}}),
    )
    .await;
    send(
        &client,
        "PATCH",
        &format!("{CONFIG_MAPS}/one"),
        "application/merge-patch+json",
        br#"{"metadata": {"labels": {"watched": null}}}"#,
    )
    .await;
    let from_now = watch_lines(
        &client,
        &format!(
            "{CONFIG_MAPS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&fieldSelector=metadata.name%3Done"
        ),
    )
    .await;
    assert_eq!(from_now.len(), 2);
    assert_eq!(
        from_now[0]["object"]["metadata"].get("labels"),
        None,
        "no empty labels left behind"
    );
    assert_eq!(from_now[1]["type"], "BOOKMARK");
    assert_eq!(
        from_now[1]["object"]["metadata"],
        json!({"resourceVersion": from_now[1]["object"]["metadata"]["resourceVersion"],
               "annotations": {"k8s.io/initial-events-end": "true"}})
    );
    let selected = watch_lines(
        &client,
        &format!("{CONFIG_MAPS}?watch=true&resourceVersion={start}&labelSelector=watched%3Dyes&timeoutSeconds=1"),
    )
    .await;
    let types: Vec<&str> = selected.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["ADDED", "DELETED"]);
    assert_eq!(
        selected[1]["object"]["metadata"]["labels"]["watched"], "yes",
        "an object leaving the selection is deleted as last seen"
    );
    // kube-apiserver's watch cache sends a bookmark 2 s before a watch's timeout to clients that take them (none
    // to the 1 s watches above); the real server's timing is too loose for the differential suite to compare it.
    let before_timeout = watch_lines(
        &client,
        &format!("{CONFIG_MAPS}?watch=true&resourceVersion={start}&allowWatchBookmarks=true&timeoutSeconds=3"),
    )
    .await;
    let types: Vec<&str> = before_timeout.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["ADDED", "MODIFIED", "BOOKMARK"]);
    assert_eq!(
        before_timeout[2]["object"]["metadata"].get("annotations"),
        None,
        "a pre-timeout bookmark is no initial-events-end bookmark"
    );
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "tickers.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "tickers", "kind": "Ticker"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    post(&client, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).await;
    let tickers = "/apis/example.com/v1/namespaces/default/tickers";
    eventually("the tickers to be served", Duration::from_secs(5), || async {
        (get(&client, tickers).await.code == 200).then_some(())
    })
    .await;
    let too_old = watch_lines(
        &client,
        &format!("{tickers}?watch=true&resourceVersion={start}&timeoutSeconds=1"),
    )
    .await;
    assert_eq!(too_old.len(), 1);
    assert_eq!(
        (&too_old[0]["type"], &too_old[0]["object"]["code"]),
        (&json!("ERROR"), &json!(410))
    );
}

#[tokio::test]
async fn orphaned_dependents_lose_the_references_from_their_managed_fields() {
    let (server, client) = server().await;
    let owner = post(&client, CONFIG_MAPS, json!({"metadata": {"name": "owner"}})).await;
    let uid = owner.body["metadata"]["uid"].as_str().unwrap().to_string();
    post(
        &client,
        CONFIG_MAPS,
        json!({"metadata": {"name": "child", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
            "name": "owner", "uid": uid}]}, "data": {"a": "1"}}),
    )
    .await;
    send(
        &client,
        "DELETE",
        &format!("{CONFIG_MAPS}/owner?propagationPolicy=Orphan"),
        "application/json",
        b"",
    )
    .await;
    server.collect_garbage();
    let child = eventually("the child to be orphaned", Duration::from_secs(5), || async {
        let child = get(&client, &format!("{CONFIG_MAPS}/child")).await.body;
        child["metadata"].get("ownerReferences").is_none().then_some(child)
    })
    .await;
    let managed = &child["metadata"]["managedFields"];
    assert_eq!(managed.as_array().map(Vec::len), Some(1), "{managed}");
    assert_eq!(managed[0]["fieldsV1"], json!({"f:data": {".": {}, "f:a": {}}}));
}

#[tokio::test]
async fn tables_and_allocated_fields() {
    let (_server, client) = server().await;
    let service = post(
        &client,
        "/api/v1/namespaces/default/services",
        json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    let owned = service.body["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"].clone();
    assert!(
        owned.get("f:clusterIP").is_none() && owned.get("f:ipFamilies").is_none(),
        "{owned}"
    );
    let secret = post(
        &client,
        "/api/v1/namespaces/default/secrets",
        json!({"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}}),
    )
    .await;
    assert_eq!(secret.body["data"], json!({"password": "aHVudGVyMg=="}));
    let request = http::Request::builder()
        .uri("/api/v1/namespaces/default/serviceaccounts")
        .header(http::header::ACCEPT, "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .unwrap();
    let table: Value = serde_json::from_str(&client.request_text(request).await.unwrap()).unwrap();
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Name", "Age"]);
    assert!(
        table["columnDefinitions"][0]["description"]
            .as_str()
            .unwrap()
            .starts_with("Name must be unique")
    );
}

#[tokio::test]
async fn events_carry_go_zero_values_and_own_fields_in_their_group() {
    let (_server, client) = server().await;
    let created = post(
        &client,
        "/apis/events.k8s.io/v1/namespaces/default/events",
        json!({"metadata": {"name": "e"}, "eventTime": "2026-01-02T03:04:05.678901Z",
               "reportingController": "example.com/c", "reportingInstance": "i", "action": "Scaling",
               "reason": "ScaledUp", "note": "up", "type": "Normal",
               "regarding": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"}}),
    )
    .await;
    assert_eq!(created.body["deprecatedSource"], json!({}));
    assert_eq!(created.body["deprecatedFirstTimestamp"], Value::Null);
    let owned = &created.body["metadata"]["managedFields"][0]["fieldsV1"];
    assert_eq!(owned["f:regarding"], json!({}));
    assert!(owned.get("f:note").is_some() && owned.get("f:message").is_none());
    let core = get(&client, "/api/v1/namespaces/default/events/e").await;
    assert_eq!(
        (
            &core.body["source"],
            &core.body["reportingComponent"],
            &core.body["firstTimestamp"]
        ),
        (&json!({}), &json!("example.com/c"), &Value::Null)
    );
    let stream = watch_lines(&client, "/api/v1/namespaces/default/events?watch=true&timeoutSeconds=1").await;
    assert_eq!(stream[0]["object"]["lastTimestamp"], Value::Null);
}
