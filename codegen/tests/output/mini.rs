/// Every API group, in `/apis` order; versions preferred first.
pub static GROUPS: &[self::rt::GroupInfo] = &[
    self::rt::GroupInfo {
        name: "zoo.example.io",
        versions: &["v1", "v1beta1"],
        listed: &[],
    },
    self::rt::GroupInfo {
        name: "tickets.example.io",
        versions: &["v1alpha1"],
        listed: &[],
    },
    self::rt::GroupInfo {
        name: "actions.example.io",
        versions: &["v1"],
        listed: &[("v1", &["animals/feed", "animals/mood", "animals/groom"])],
    },
];
/// Every kind in every version: groups in order, versions preferred first, kinds in document order.
pub static RESOURCES: &[self::rt::ResourceInfo] = &[
    self::rt::ResourceInfo {
        group: "zoo.example.io",
        version: "v1",
        storage_version: "v1",
        kind: "Animal",
        list_kind: "AnimalList",
        plural: "animals",
        singular: "animal",
        namespaced: true,
        short_names: &["an"],
        categories: &["all"],
        verbs: &[
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch",
        ],
        printer_columns: &[
            self::rt::PrinterColumn {
                name: "Species",
                type_: "string",
                format: "",
                description: "what it is",
                priority: 0,
                json_path: ".spec.species",
                cell: ::std::option::Option::None,
            },
            self::rt::PrinterColumn {
                name: "Age",
                type_: "date",
                format: "",
                description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
                priority: 0,
                json_path: ".metadata.creationTimestamp",
                cell: ::std::option::Option::None,
            },
        ],
        token_field: ::std::option::Option::None,
        status_subresource: false,
        scale: ::std::option::Option::None,
        finalize_subresource: false,
        binding_subresource: false,
        eviction_subresource: false,
        log_subresource: false,
        selectable_fields: &[],
        namespaces: false,
        events: false,
        dns_subdomain_names: false,
        dns1035_label_names: false,
        kube_role: ::std::option::Option::None,
        service_addresses: false,
        data_rules: ::std::option::Option::None,
        generation: true,
        strategic_merge_patch: false,
        update_rules: &[],
        default_class: ::std::option::Option::Some(self::rt::DefaultClass {
            field: "spec.enclosure",
            group: "zoo.example.io",
            plural: "enclosures",
            annotations: &["zoo.example.io/default-enclosure"],
            skip_annotation: "",
        }),
    },
    self::rt::ResourceInfo {
        group: "zoo.example.io",
        version: "v1",
        storage_version: "v1",
        kind: "Enclosure",
        list_kind: "EnclosureList",
        plural: "enclosures",
        singular: "enclosure",
        namespaced: false,
        short_names: &["enc"],
        categories: &[],
        verbs: &[
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ],
        printer_columns: &[
            self::rt::PrinterColumn {
                name: "Capacity",
                type_: "integer",
                format: "int32",
                description: "how many fit",
                priority: 1,
                json_path: ".spec.capacity",
                cell: ::std::option::Option::None,
            },
            self::rt::PrinterColumn {
                name: "Habitat",
                type_: "string",
                format: "",
                description: "Where its animals live, or the animals it holds.",
                priority: 1,
                json_path: "",
                cell: ::std::option::Option::Some(
                    &self::rt::Cell::FirstOf(
                        &[
                            self::rt::Cell::Path(".spec.habitat"),
                            self::rt::Cell::Join(
                                "/",
                                &[
                                    self::rt::Cell::Lower(&self::rt::Cell::Path(".kind")),
                                    self::rt::Cell::Path(".metadata.name"),
                                ],
                            ),
                            self::rt::Cell::Int(0),
                        ],
                    ),
                ),
            },
            self::rt::PrinterColumn {
                name: "Keepers",
                type_: "string",
                format: "",
                description: "Who keeps it, as kube's printers list node roles.",
                priority: 1,
                json_path: "",
                cell: ::std::option::Option::Some(
                    &self::rt::Cell::Printer(self::rt::Printer::NodeRoles),
                ),
            },
            self::rt::PrinterColumn {
                name: "Open",
                type_: "string",
                format: "",
                description: "Whether it is open (false unless said).",
                priority: 1,
                json_path: "",
                cell: ::std::option::Option::Some(
                    &self::rt::Cell::FirstOf(
                        &[
                            self::rt::Cell::Path(".spec.open"),
                            self::rt::Cell::Bool(false),
                        ],
                    ),
                ),
            },
        ],
        token_field: ::std::option::Option::None,
        status_subresource: true,
        scale: ::std::option::Option::Some(self::rt::ScaleInfo {
            spec_replicas_path: ".spec.replicas",
            status_replicas_path: ".status.replicas",
            label_selector_path: ::std::option::Option::Some(".status.labelSelector"),
        }),
        finalize_subresource: true,
        binding_subresource: true,
        eviction_subresource: true,
        log_subresource: true,
        selectable_fields: &[
            self::rt::SelectableField {
                name: "spec.habitat",
                json_path: ".spec.habitat",
                missing: "",
            },
        ],
        namespaces: false,
        events: false,
        dns_subdomain_names: false,
        dns1035_label_names: false,
        kube_role: ::std::option::Option::Some(self::rt::KubeRole::Service),
        service_addresses: false,
        data_rules: ::std::option::Option::Some(
            &self::rt::DataRules {
                key_maps: &[
                    self::rt::DataMap {
                        field: "notes",
                        base64: false,
                    },
                    self::rt::DataMap {
                        field: "photos",
                        base64: true,
                    },
                ],
                max_total_size: ::std::option::Option::Some(self::rt::SizeLimit {
                    maps: &[
                        self::rt::DataMap {
                            field: "notes",
                            base64: false,
                        },
                        self::rt::DataMap {
                            field: "photos",
                            base64: true,
                        },
                    ],
                    bytes: 1048576,
                    field: "",
                }),
                write_only: &[
                    self::rt::WriteOnly {
                        field: "draftPhotos",
                        into: "photos",
                        base64: true,
                    },
                ],
                immutable_after_create: &["sealed"],
                immutable_flag: ::std::option::Option::Some(self::rt::ImmutableFlag {
                    field: "sealed",
                    freezes: &["notes", "photos"],
                }),
                required_keys: &[
                    self::rt::RequiredKeys {
                        when_field: "spec.habitat",
                        equals: "aquarium",
                        map: "notes",
                        base64: false,
                        keys: &["water.json"],
                        any: false,
                        non_empty: false,
                        format: ::std::option::Option::Some(self::rt::ValueFormat::Json),
                    },
                ],
            },
        ),
        generation: true,
        strategic_merge_patch: true,
        update_rules: &[
            self::rt::UpdateRule::Frozen {
                at: "spec",
                only: &[],
                except: &[
                    self::rt::Exception {
                        path: "habitat",
                        when: self::rt::Allowed::SetOnce,
                    },
                ],
                field: "spec",
                message: "spec is immutable but for its habitat, once",
                diff: "zoo.EnclosureSpec",
            },
        ],
        default_class: ::std::option::Option::None,
    },
    self::rt::ResourceInfo {
        group: "zoo.example.io",
        version: "v1beta1",
        storage_version: "v1",
        kind: "Animal",
        list_kind: "AnimalList",
        plural: "animals",
        singular: "animal",
        namespaced: true,
        short_names: &["an"],
        categories: &["all"],
        verbs: &[
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch",
        ],
        printer_columns: &[
            self::rt::PrinterColumn {
                name: "Species",
                type_: "string",
                format: "",
                description: "what it is",
                priority: 0,
                json_path: ".spec.species",
                cell: ::std::option::Option::None,
            },
            self::rt::PrinterColumn {
                name: "Age",
                type_: "date",
                format: "",
                description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
                priority: 0,
                json_path: ".metadata.creationTimestamp",
                cell: ::std::option::Option::None,
            },
        ],
        token_field: ::std::option::Option::None,
        status_subresource: false,
        scale: ::std::option::Option::None,
        finalize_subresource: false,
        binding_subresource: false,
        eviction_subresource: false,
        log_subresource: false,
        selectable_fields: &[],
        namespaces: false,
        events: false,
        dns_subdomain_names: false,
        dns1035_label_names: false,
        kube_role: ::std::option::Option::None,
        service_addresses: false,
        data_rules: ::std::option::Option::None,
        generation: true,
        strategic_merge_patch: false,
        update_rules: &[],
        default_class: ::std::option::Option::None,
    },
    self::rt::ResourceInfo {
        group: "tickets.example.io",
        version: "v1alpha1",
        storage_version: "v1alpha1",
        kind: "TicketRequest",
        list_kind: "TicketRequestList",
        plural: "ticketrequests",
        singular: "ticketrequest",
        namespaced: true,
        short_names: &["tr"],
        categories: &[],
        verbs: &["create"],
        printer_columns: &[],
        token_field: ::std::option::Option::Some("spec.animalName"),
        status_subresource: false,
        scale: ::std::option::Option::None,
        finalize_subresource: false,
        binding_subresource: false,
        eviction_subresource: false,
        log_subresource: false,
        selectable_fields: &[],
        namespaces: false,
        events: false,
        dns_subdomain_names: false,
        dns1035_label_names: false,
        kube_role: ::std::option::Option::None,
        service_addresses: false,
        data_rules: ::std::option::Option::None,
        generation: false,
        strategic_merge_patch: false,
        update_rules: &[],
        default_class: ::std::option::Option::None,
    },
];
/// The OpenAPI v2 document, byte for byte as checked in.
pub static OPENAPI_V2: &[u8] = include_bytes!(
    concat!(env!("OUT_DIR"), "/openapi-v2.json")
);
/// The same document as gnostic's `openapi.v2.Document` protobuf, encoded at build time.
pub static OPENAPI_V2_PB: &[u8] = include_bytes!(
    concat!(env!("OUT_DIR"), "/openapi-v2.pb")
);
/// One OpenAPI v3 document per group-version, derived from the v2 document at build time.
pub static OPENAPI_V3: &[self::rt::OpenApiV3Doc] = &[
    self::rt::OpenApiV3Doc {
        path: "apis/zoo.example.io/v1",
        json: include_bytes!(
            concat!(env!("OUT_DIR"), "/openapi-v3/apis/zoo.example.io/v1.json")
        ),
    },
    self::rt::OpenApiV3Doc {
        path: "apis/zoo.example.io/v1beta1",
        json: include_bytes!(
            concat!(env!("OUT_DIR"), "/openapi-v3/apis/zoo.example.io/v1beta1.json")
        ),
    },
    self::rt::OpenApiV3Doc {
        path: "apis/tickets.example.io/v1alpha1",
        json: include_bytes!(
            concat!(env!("OUT_DIR"), "/openapi-v3/apis/tickets.example.io/v1alpha1.json")
        ),
    },
    self::rt::OpenApiV3Doc {
        path: "apis/actions.example.io/v1",
        json: include_bytes!(
            concat!(env!("OUT_DIR"), "/openapi-v3/apis/actions.example.io/v1.json")
        ),
    },
];
