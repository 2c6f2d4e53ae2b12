//! `virt-apiserver kubeconfig`: a self-contained kubeconfig for one user, so kubectl and client
//! libraries connect with `--kubeconfig FILE` alone. Files given are embedded as `*-data`.

use base64::Engine;
use serde::Serialize;

/// What goes into the kubeconfig.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct KubeconfigArgs {
    /// The server's URL, e.g. https://127.0.0.1:6443.
    #[arg(long)]
    pub server: String,
    /// The user's name in the file (a token or certificate says who it is to the server).
    #[arg(long, default_value = "virt-apiserver-user")]
    pub user: String,
    /// A bearer token from the server's --token-auth-file.
    #[arg(long)]
    pub token: Option<String>,
    /// CA certificate (PEM) that signed the server's certificate.
    #[arg(long)]
    pub certificate_authority: Option<String>,
    /// Client certificate (PEM) signed by the server's --client-ca-file.
    #[arg(long, requires = "client_key")]
    pub client_certificate: Option<String>,
    /// The client certificate's private key (PEM).
    #[arg(long, requires = "client_certificate")]
    pub client_key: Option<String>,
    /// Skip verifying the server's certificate (testing only).
    #[arg(long)]
    pub insecure_skip_tls_verify: bool,
    /// Name of the cluster and context entries.
    #[arg(long, default_value = "virt-apiserver")]
    pub cluster_name: String,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    server: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    certificate_authority_data: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    insecure_skip_tls_verify: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct AuthInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_certificate_data: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_key_data: Option<String>,
}

#[derive(Serialize)]
struct Named<T> {
    name: String,
    #[serde(flatten)]
    value: T,
}

#[derive(Serialize)]
struct ClusterEntry {
    cluster: Cluster,
}
#[derive(Serialize)]
struct UserEntry {
    user: AuthInfo,
}
#[derive(Serialize)]
struct ContextEntry {
    context: Context,
}
#[derive(Serialize)]
struct Context {
    cluster: String,
    user: String,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct Config {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    clusters: Vec<Named<ClusterEntry>>,
    users: Vec<Named<UserEntry>>,
    contexts: Vec<Named<ContextEntry>>,
    current_context: String,
    preferences: serde_json::Map<String, serde_json::Value>,
}

fn embed(path: &Option<String>) -> Result<Option<String>, String> {
    path.as_deref()
        .map(|p| {
            std::fs::read(p)
                .map(|b| base64::engine::general_purpose::STANDARD.encode(b))
                .map_err(|e| format!("{p}: {e}"))
        })
        .transpose()
}

/// The kubeconfig YAML for `args`.
pub fn render(args: &KubeconfigArgs) -> Result<String, String> {
    if args.token.is_none() && args.client_certificate.is_none() {
        eprintln!(
            "warning: no --token or --client-certificate: the server will see no credentials"
        );
    }
    let context = format!("{}@{}", args.user, args.cluster_name);
    let config = Config {
        api_version: "v1",
        kind: "Config",
        clusters: vec![Named {
            name: args.cluster_name.clone(),
            value: ClusterEntry {
                cluster: Cluster {
                    server: args.server.clone(),
                    certificate_authority_data: embed(&args.certificate_authority)?,
                    insecure_skip_tls_verify: args.insecure_skip_tls_verify,
                },
            },
        }],
        users: vec![Named {
            name: args.user.clone(),
            value: UserEntry {
                user: AuthInfo {
                    token: args.token.clone(),
                    client_certificate_data: embed(&args.client_certificate)?,
                    client_key_data: embed(&args.client_key)?,
                },
            },
        }],
        contexts: vec![Named {
            name: context.clone(),
            value: ContextEntry {
                context: Context { cluster: args.cluster_name.clone(), user: args.user.clone() },
            },
        }],
        current_context: context,
        preferences: Default::default(),
    };
    serde_yaml::to_string(&config).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_kubeconfig() {
        let y = render(&KubeconfigArgs {
            server: "https://127.0.0.1:6443".into(),
            user: "alice".into(),
            token: Some("tok".into()),
            cluster_name: "c".into(),
            ..Default::default()
        })
        .unwrap();
        let v: serde_json::Value = serde_yaml::from_str(&y).unwrap();
        assert_eq!(v["current-context"], "alice@c");
        assert_eq!(v["clusters"][0]["cluster"]["server"], "https://127.0.0.1:6443");
        assert_eq!(v["users"][0]["name"], "alice");
        assert_eq!(v["users"][0]["user"]["token"], "tok");
        assert_eq!(v["contexts"][0]["context"]["user"], "alice");
        assert!(v["clusters"][0]["cluster"].get("insecure-skip-tls-verify").is_none());
    }
}
