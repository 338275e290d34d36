//! The real kubectl against a served port: output and errors compared with what a cluster prints.

use std::time::Duration;

use wasm_reconciler_apiserver::{ApiServer, write_kubeconfig};

use crate::support::{Kubectl, Lines, eventually};

const CONFIG_MAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
  labels:
    app: demo
data:
  key: one
";

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
";

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    shortNames: [wd]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Color
      type: string
      jsonPath: .spec.color
    - name: Size
      type: integer
      jsonPath: .spec.size
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color:
                type: string
                enum: [red, blue]
              size:
                type: integer
                default: 3
";

/// Columns of a table line.
fn columns(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

#[tokio::test]
async fn create_get_describe_and_errors() {
    let kubectl = Kubectl::start().await;
    kubectl.file("cm.yaml", CONFIG_MAP);
    assert_eq!(
        kubectl.ok(&["create", "-f", "cm.yaml"]).await,
        "configmap/demo created\n"
    );
    let err = kubectl.fails(&["create", "-f", "cm.yaml"]).await;
    assert_eq!(
        err,
        "Error from server (AlreadyExists): error when creating \"cm.yaml\": configmaps \"demo\" already exists\n"
    );

    let table = kubectl.ok(&["get", "configmaps"]).await;
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(columns(lines[0]), ["NAME", "DATA", "AGE"]);
    assert_eq!(columns(lines[1])[..2], ["demo", "1"]);

    let err = kubectl.fails(&["get", "configmap", "nope"]).await;
    assert_eq!(err, "Error from server (NotFound): configmaps \"nope\" not found\n");
    let err = kubectl.fails(&["get", "widgets"]).await;
    assert_eq!(err, "error: the server doesn't have a resource type \"widgets\"\n");

    let yaml = kubectl.ok(&["get", "cm", "demo", "-o", "yaml"]).await;
    assert!(
        yaml.starts_with("apiVersion: v1\ndata:\n  key: one\nkind: ConfigMap\nmetadata:\n"),
        "{yaml}"
    );
    assert!(
        yaml.contains("  name: demo\n  namespace: default\n  resourceVersion: "),
        "{yaml}"
    );

    let namespaces = kubectl.ok(&["get", "ns"]).await;
    let names: Vec<&str> = namespaces.lines().skip(1).map(|l| columns(l)[0]).collect();
    assert_eq!(names, ["default", "kube-node-lease", "kube-public", "kube-system"]);
    assert!(namespaces.lines().skip(1).all(|l| columns(l)[1] == "Active"));

    let described = kubectl.ok(&["describe", "configmap", "demo"]).await;
    assert!(
        described.starts_with("Name:         demo\nNamespace:    default\nLabels:       app=demo\n"),
        "{described}"
    );
    assert!(described.contains("Data\n====\nkey:\n----\none\n"), "{described}");

    let resources = kubectl.ok(&["api-resources"]).await;
    let lines: Vec<Vec<&str>> = resources.lines().map(columns).collect();
    assert_eq!(lines[0], ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]);
    assert!(lines.contains(&vec!["configmaps", "cm", "v1", "true", "ConfigMap"]));
    assert!(lines.contains(&vec!["deployments", "deploy", "apps/v1", "true", "Deployment"]));
    assert!(lines.contains(&vec![
        "customresourcedefinitions",
        "crd,crds",
        "apiextensions.k8s.io/v1",
        "false",
        "CustomResourceDefinition"
    ]));

    let raw = kubectl
        .ok(&["get", "--raw", "/api/v1/namespaces/default/configmaps/demo"])
        .await;
    let raw: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(raw["data"]["key"], "one");

    assert_eq!(
        kubectl.ok(&["label", "cm", "demo", "tier=web"]).await,
        "configmap/demo labeled\n"
    );
    assert_eq!(
        kubectl.ok(&["annotate", "cm", "demo", "note=hi"]).await,
        "configmap/demo annotated\n"
    );
    let labelled = kubectl.ok(&["get", "cm", "-l", "tier=web", "-o", "name"]).await;
    assert_eq!(labelled, "configmap/demo\n");
    assert_eq!(
        kubectl.ok(&["get", "cm", "-l", "tier!=web", "-o", "name"]).await,
        "configmap/kube-root-ca.crt\n",
        "the namespace's CA bundle, as in a cluster"
    );
    let version = kubectl.ok(&["version"]).await;
    assert!(version.contains("Server Version: v1.33.0"), "{version}");
}

#[tokio::test]
async fn apply_client_and_server_side() {
    let kubectl = Kubectl::start().await;
    kubectl.file("cm.yaml", CONFIG_MAP);
    assert_eq!(
        kubectl.ok(&["apply", "-f", "cm.yaml"]).await,
        "configmap/demo created\n"
    );
    assert_eq!(
        kubectl.ok(&["apply", "-f", "cm.yaml"]).await,
        "configmap/demo unchanged\n"
    );
    kubectl.file("cm.yaml", &CONFIG_MAP.replace("one", "two"));
    assert_eq!(
        kubectl.ok(&["apply", "-f", "cm.yaml"]).await,
        "configmap/demo configured\n"
    );

    kubectl.file("deploy.yaml", DEPLOYMENT);
    assert_eq!(
        kubectl.ok(&["apply", "-f", "deploy.yaml"]).await,
        "deployment.apps/web created\n"
    );
    kubectl.file("deploy.yaml", &DEPLOYMENT.replace("nginx:1.27", "nginx:1.28"));
    assert_eq!(
        kubectl.ok(&["apply", "-f", "deploy.yaml"]).await,
        "deployment.apps/web configured\n"
    );
    let image = kubectl
        .ok(&[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[*].image} {.metadata.generation}",
        ])
        .await;
    assert_eq!(image, "nginx:1.28 2");

    kubectl.file("ssa.yaml", &CONFIG_MAP.replace("demo", "ssa"));
    assert_eq!(
        kubectl.ok(&["apply", "--server-side", "-f", "ssa.yaml"]).await,
        "configmap/ssa serverside-applied\n"
    );
    kubectl.file("ssa.yaml", &CONFIG_MAP.replace("demo", "ssa").replace("one", "three"));
    let err = kubectl
        .fails(&["apply", "--server-side", "--field-manager=other", "-f", "ssa.yaml"])
        .await;
    assert!(
        err.starts_with("error: Apply failed with 1 conflict: conflict with \"kubectl\": .data.key\nPlease review the fields above--they currently have other managers."),
        "{err}"
    );
    assert_eq!(
        kubectl
            .ok(&[
                "apply",
                "--server-side",
                "--field-manager=other",
                "--force-conflicts",
                "-f",
                "ssa.yaml"
            ])
            .await,
        "configmap/ssa serverside-applied\n"
    );
    assert_eq!(
        kubectl.ok(&["get", "cm", "ssa", "-o", "jsonpath={.data.key}"]).await,
        "three"
    );
}

#[tokio::test]
async fn patch_replace_and_wait() {
    let kubectl = Kubectl::start().await;
    kubectl.file("cm.yaml", CONFIG_MAP);
    kubectl.file("deploy.yaml", DEPLOYMENT);
    kubectl.ok(&["create", "-f", "cm.yaml", "-f", "deploy.yaml"]).await;
    assert_eq!(
        kubectl
            .ok(&["patch", "cm", "demo", "--type=merge", "-p", r#"{"data":{"m":"1"}}"#])
            .await,
        "configmap/demo patched\n"
    );
    assert_eq!(
        kubectl
            .ok(&[
                "patch",
                "cm",
                "demo",
                "--type=json",
                "-p",
                r#"[{"op":"add","path":"/data/j","value":"2"}]"#
            ])
            .await,
        "configmap/demo patched\n"
    );
    assert_eq!(
        kubectl
            .ok(&[
                "patch",
                "deploy",
                "web",
                "-p",
                r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:2"}]}}}}"#
            ])
            .await,
        "deployment.apps/web patched\n"
    );
    assert_eq!(
        kubectl
            .ok(&["patch", "cm", "demo", "--type=merge", "-p", r#"{"data":{"m":"1"}}"#])
            .await,
        "configmap/demo patched (no change)\n"
    );
    let status = r#"{"status":{"replicas":2,"readyReplicas":2,"updatedReplicas":2,"availableReplicas":2,"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"ok"}]}}"#;
    assert_eq!(
        kubectl
            .ok(&[
                "patch",
                "deploy",
                "web",
                "--subresource=status",
                "--type=merge",
                "-p",
                status
            ])
            .await,
        "deployment.apps/web patched\n"
    );
    let table = kubectl.ok(&["get", "deploy", "web"]).await;
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(columns(lines[0]), ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert_eq!(columns(lines[1])[..4], ["web", "2/2", "2", "2"]);
    assert_eq!(
        kubectl
            .ok(&["wait", "deploy/web", "--for=condition=Available", "--timeout=10s"])
            .await,
        "deployment.apps/web condition met\n"
    );

    let stale = kubectl.ok(&["get", "cm", "demo", "-o", "yaml"]).await;
    kubectl.ok(&["label", "cm", "demo", "bump=1"]).await;
    kubectl.file("stale.yaml", &stale.replace("key: one", "key: stale"));
    let err = kubectl.fails(&["replace", "-f", "stale.yaml"]).await;
    assert_eq!(
        err,
        "Error from server (Conflict): error when replacing \"stale.yaml\": Operation cannot be fulfilled on configmaps \"demo\": the object has been modified; please apply your changes to the latest version and try again\n"
    );
}

async fn create_owned_pair(kubectl: &Kubectl, owner: &str, dependent: &str) {
    kubectl.file(
        &format!("{owner}.yaml"),
        &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {owner}\n"),
    );
    kubectl.ok(&["create", "-f", &format!("{owner}.yaml")]).await;
    let uid = kubectl
        .ok(&["get", "cm", owner, "-o", "jsonpath={.metadata.uid}"])
        .await;
    let manifest = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {dependent}\n  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: {owner}\n    uid: {uid}\n    blockOwnerDeletion: true\n"
    );
    let file = format!("{dependent}.yaml");
    kubectl.file(&file, &manifest);
    kubectl.ok(&["create", "-f", &file]).await;
}

#[tokio::test]
async fn delete_with_each_cascade() {
    let kubectl = Kubectl::start().await;
    for (cascade, owner, dependent) in [
        ("background", "bg-owner", "bg-dep"),
        ("foreground", "fg-owner", "fg-dep"),
        ("orphan", "or-owner", "or-dep"),
    ] {
        create_owned_pair(&kubectl, owner, dependent).await;
        let out = kubectl
            .ok(&["delete", "cm", owner, &format!("--cascade={cascade}")])
            .await;
        // kubectl 1.33 and later name the namespace; older ones do not.
        assert!(
            [
                format!("configmap \"{owner}\" deleted from default namespace\n"),
                format!("configmap \"{owner}\" deleted\n"),
            ]
            .contains(&out),
            "kubectl delete printed {out:?}"
        );
        let dependent_exists = || async { kubectl.run(&["get", "cm", dependent, "-o", "name"]).await.success };
        if cascade == "orphan" {
            assert!(dependent_exists().await);
            let owners = kubectl
                .ok(&["get", "cm", dependent, "-o", "jsonpath={.metadata.ownerReferences}"])
                .await;
            assert_eq!(owners, "");
        } else {
            eventually("dependent collected", Duration::from_secs(5), || async {
                (!dependent_exists().await).then_some(())
            })
            .await;
        }
    }
}

#[tokio::test]
async fn watch_prints_new_objects() {
    let kubectl = Kubectl::start().await;
    kubectl.file(
        "existing.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: existing\n",
    );
    kubectl.file(
        "watched.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: watched\n",
    );
    kubectl.ok(&["create", "-f", "existing.yaml"]).await;
    let mut child = kubectl.spawn(&["get", "configmaps", "-w"]);
    let mut lines = Lines::of(&mut child);
    let listed = lines
        .until(Duration::from_secs(10), |line| line.starts_with("existing"))
        .await;
    kubectl.ok(&["create", "-f", "watched.yaml"]).await;
    let watched = lines
        .until(Duration::from_secs(10), |line| line.starts_with("watched"))
        .await;
    child.kill().ok();
    child.wait().ok();
    assert_eq!(columns(&listed[0]), ["NAME", "DATA", "AGE"]);
    assert_eq!(columns(&listed[1])[..2], ["existing", "0"]);
    // A watch that starts with a list shows every ConfigMap, the namespace's kube-root-ca.crt too.
    let watched: Vec<&String> = watched
        .iter()
        .filter(|line| !line.starts_with("kube-root-ca.crt"))
        .collect();
    assert_eq!(watched.len(), 1, "{watched:?}");
    assert_eq!(columns(watched[0])[..2], ["watched", "0"]);
}

#[tokio::test]
async fn custom_resources_with_printer_columns() {
    let kubectl = Kubectl::start().await;
    kubectl.file("crd.yaml", CRD);
    assert_eq!(
        kubectl.ok(&["apply", "-f", "crd.yaml"]).await,
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created\n"
    );
    assert_eq!(
        kubectl
            .ok(&[
                "wait",
                "--for=condition=Established",
                "crd/widgets.example.com",
                "--timeout=10s"
            ])
            .await,
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com condition met\n"
    );
    kubectl.file(
        "w.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  color: red\n",
    );
    assert_eq!(
        kubectl.ok(&["apply", "-f", "w.yaml"]).await,
        "widget.example.com/w1 created\n"
    );
    let table = kubectl.ok(&["get", "wd"]).await;
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(columns(lines[0]), ["NAME", "COLOR", "SIZE"]);
    assert_eq!(columns(lines[1]), ["w1", "red", "3"]);
    kubectl.file(
        "bad.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: bad\nspec:\n  color: green\n",
    );
    let err = kubectl.fails(&["apply", "-f", "bad.yaml"]).await;
    assert_eq!(
        err,
        "The Widget \"bad\" is invalid: spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\"\n"
    );
    kubectl.file(
        "extra.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: extra\nspec:\n  color: red\n  shape: round\n",
    );
    let err = kubectl.fails(&["create", "-f", "extra.yaml"]).await;
    assert_eq!(
        err,
        "Error from server (BadRequest): error when creating \"extra.yaml\": Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.shape\"\n"
    );
    let crds = kubectl.ok(&["get", "crd"]).await;
    assert_eq!(
        columns(crds.lines().next().unwrap()),
        ["NAME", "SCOPE", "VERSIONS", "CREATED", "AT"]
    );
    assert_eq!(
        kubectl.ok(&["delete", "-f", "crd.yaml"]).await,
        "customresourcedefinition.apiextensions.k8s.io \"widgets.example.com\" deleted\n"
    );
    let groups = kubectl.ok(&["get", "--raw", "/apis"]).await;
    assert!(!groups.contains("example.com"), "discovery forgets the group: {groups}");
    let err = kubectl.fails(&["get", "widgets"]).await;
    assert!(
        err.contains("NotFound") || err.contains("doesn't have a resource type"),
        "{err}"
    );
}

#[tokio::test]
async fn restart_with_data_dir_keeps_objects() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = ApiServer::builder().data_dir(Some(data.clone())).build().await.unwrap();
    let mut kubectl = Kubectl::start_with(server, dir).await;
    kubectl.file("cm.yaml", CONFIG_MAP);
    kubectl.ok(&["apply", "-f", "cm.yaml"]).await;
    let before = kubectl
        .ok(&["get", "cm", "demo", "-o", "jsonpath={.metadata.resourceVersion}"])
        .await;
    kubectl.serving.take().unwrap().shutdown().await;
    drop(std::mem::replace(
        &mut kubectl.server,
        ApiServer::builder().build().await.unwrap(),
    ));
    let server = eventually("data directory released", Duration::from_secs(5), || {
        let data = data.clone();
        async move { ApiServer::builder().data_dir(Some(data)).build().await.ok() }
    })
    .await;
    let serving = server.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    write_kubeconfig(&kubectl.path("kubeconfig"), &serving.url(), None).unwrap();
    kubectl.server = server;
    kubectl.serving = Some(serving);
    let after = kubectl
        .ok(&[
            "get",
            "cm",
            "demo",
            "-o",
            "jsonpath={.metadata.resourceVersion} {.data.key}",
        ])
        .await;
    assert_eq!(after, format!("{before} one"));
    assert_eq!(
        kubectl.ok(&["apply", "-f", "cm.yaml"]).await,
        "configmap/demo unchanged\n"
    );
}

#[tokio::test]
async fn typed_create_commands_send_protobuf() {
    let kubectl = Kubectl::start().await;
    assert_eq!(
        kubectl
            .ok(&["create", "configmap", "literal", "--from-literal=a=b"])
            .await,
        "configmap/literal created\n"
    );
    assert_eq!(
        kubectl.ok(&["get", "cm", "literal", "-o", "jsonpath={.data.a}"]).await,
        "b"
    );
    assert_eq!(
        kubectl.ok(&["create", "namespace", "team-a"]).await,
        "namespace/team-a created\n"
    );
    assert_eq!(
        kubectl
            .ok(&[
                "create",
                "deployment",
                "web",
                "--image=nginx:1.27",
                "--replicas=0",
                "-n",
                "team-a"
            ])
            .await,
        "deployment.apps/web created\n"
    );
    assert_eq!(
        kubectl
            .ok(&[
                "get",
                "deploy",
                "web",
                "-n",
                "team-a",
                "-o",
                "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}"
            ])
            .await,
        "0 nginx:1.27"
    );
    assert_eq!(
        kubectl
            .ok(&["create", "secret", "generic", "s", "--from-literal=password=hunter2"])
            .await,
        "secret/s created\n"
    );
    assert_eq!(
        kubectl
            .ok(&["get", "secret", "s", "-o", "jsonpath={.data.password}"])
            .await,
        "aHVudGVyMg=="
    );
    let err = kubectl.fails(&["create", "configmap", "literal"]).await;
    assert_eq!(
        err,
        "error: failed to create configmap: configmaps \"literal\" already exists\n"
    );
}
