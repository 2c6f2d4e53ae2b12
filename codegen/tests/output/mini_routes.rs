/// Registers one `web::resource` per document path, those below a group-version in
/// that group-version's `web::scope`.
pub fn configure(cfg: &mut ::actix_web::web::ServiceConfig) {
    cfg.service(
        ::actix_web::web::scope("/openapi/v3")
            .service(
                ::actix_web::web::resource("")
                    .route(::actix_web::web::get().to(get_openapi_v3_index)),
            )
            .service(
                ::actix_web::web::resource("/apis/{group}/{version}")
                    .route(::actix_web::web::get().to(get_openapi_v3_document)),
            ),
    );
    cfg.service(
        ::actix_web::web::scope("/apis/zoo.example.io/v1beta1")
            .service(
                ::actix_web::web::resource("/")
                    .route(
                        ::actix_web::web::get()
                            .to(get_zoo_example_io_v1beta1_api_resources),
                    ),
            )
            .service(
                ::actix_web::web::resource("")
                    .route(
                        ::actix_web::web::get()
                            .to(get_zoo_example_io_v1beta1_api_resources),
                    ),
            )
            .service(
                ::actix_web::web::resource("/namespaces/{namespace}/animals")
                    .route(
                        ::actix_web::web::get()
                            .to(list_zoo_example_io_v1beta1_namespaced_animal),
                    )
                    .route(
                        ::actix_web::web::post()
                            .to(create_zoo_example_io_v1beta1_namespaced_animal),
                    )
                    .route(
                        ::actix_web::web::delete()
                            .to(
                                delete_zoo_example_io_v1beta1_collection_namespaced_animal,
                            ),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[2], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/namespaces/{namespace}/animals/{name}")
                    .route(
                        ::actix_web::web::get()
                            .to(read_zoo_example_io_v1beta1_namespaced_animal),
                    )
                    .route(
                        ::actix_web::web::put()
                            .to(replace_zoo_example_io_v1beta1_namespaced_animal),
                    )
                    .route(
                        ::actix_web::web::patch()
                            .to(patch_zoo_example_io_v1beta1_namespaced_animal),
                    )
                    .route(
                        ::actix_web::web::delete()
                            .to(delete_zoo_example_io_v1beta1_namespaced_animal),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[2], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/animals")
                    .route(
                        ::actix_web::web::get()
                            .to(list_zoo_example_io_v1beta1_animal_for_all_namespaces),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[2], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/watch/namespaces/{namespace}/animals")
                    .route(
                        ::actix_web::web::get()
                            .to(watch_zoo_example_io_v1beta1_namespaced_animal_list),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[2], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource(
                        "/watch/namespaces/{namespace}/animals/{name}",
                    )
                    .route(
                        ::actix_web::web::get()
                            .to(watch_zoo_example_io_v1beta1_namespaced_animal),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[2], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/watch/animals")
                    .route(
                        ::actix_web::web::get()
                            .to(
                                watch_zoo_example_io_v1beta1_animal_list_for_all_namespaces,
                            ),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[2], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/healthz")
                    .route(
                        ::actix_web::web::get().to(get_zoo_example_io_v1beta1_healthz),
                    ),
            ),
    );
    cfg.service(
        ::actix_web::web::scope("/apis/zoo.example.io/v1")
            .service(
                ::actix_web::web::resource("/")
                    .route(
                        ::actix_web::web::get().to(get_zoo_example_io_v1_api_resources),
                    ),
            )
            .service(
                ::actix_web::web::resource("")
                    .route(
                        ::actix_web::web::get().to(get_zoo_example_io_v1_api_resources),
                    ),
            )
            .service(
                ::actix_web::web::resource("/namespaces/{namespace}/animals")
                    .route(
                        ::actix_web::web::get()
                            .to(list_zoo_example_io_v1_namespaced_animal),
                    )
                    .route(
                        ::actix_web::web::post()
                            .to(create_zoo_example_io_v1_namespaced_animal),
                    )
                    .route(
                        ::actix_web::web::delete()
                            .to(delete_zoo_example_io_v1_collection_namespaced_animal),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[0], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/namespaces/{namespace}/animals/{name}")
                    .route(
                        ::actix_web::web::get()
                            .to(read_zoo_example_io_v1_namespaced_animal),
                    )
                    .route(
                        ::actix_web::web::put()
                            .to(replace_zoo_example_io_v1_namespaced_animal),
                    )
                    .route(
                        ::actix_web::web::patch()
                            .to(patch_zoo_example_io_v1_namespaced_animal),
                    )
                    .route(
                        ::actix_web::web::delete()
                            .to(delete_zoo_example_io_v1_namespaced_animal),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[0], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/animals")
                    .route(
                        ::actix_web::web::get()
                            .to(list_zoo_example_io_v1_animal_for_all_namespaces),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[0], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/watch/namespaces/{namespace}/animals")
                    .route(
                        ::actix_web::web::get()
                            .to(watch_zoo_example_io_v1_namespaced_animal_list),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[0], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource(
                        "/watch/namespaces/{namespace}/animals/{name}",
                    )
                    .route(
                        ::actix_web::web::get()
                            .to(watch_zoo_example_io_v1_namespaced_animal),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[0], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/watch/animals")
                    .route(
                        ::actix_web::web::get()
                            .to(watch_zoo_example_io_v1_animal_list_for_all_namespaces),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[0], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/enclosures")
                    .route(::actix_web::web::get().to(list_zoo_example_io_v1_enclosure))
                    .route(
                        ::actix_web::web::post().to(create_zoo_example_io_v1_enclosure),
                    )
                    .route(
                        ::actix_web::web::delete()
                            .to(delete_zoo_example_io_v1_collection_enclosure),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[1], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/enclosures/{name}")
                    .route(::actix_web::web::get().to(read_zoo_example_io_v1_enclosure))
                    .route(
                        ::actix_web::web::put().to(replace_zoo_example_io_v1_enclosure),
                    )
                    .route(
                        ::actix_web::web::patch().to(patch_zoo_example_io_v1_enclosure),
                    )
                    .route(
                        ::actix_web::web::delete().to(delete_zoo_example_io_v1_enclosure),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[1], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/enclosures/{name}/status")
                    .route(
                        ::actix_web::web::get()
                            .to(read_zoo_example_io_v1_enclosure_status),
                    )
                    .route(
                        ::actix_web::web::put()
                            .to(replace_zoo_example_io_v1_enclosure_status),
                    )
                    .route(
                        ::actix_web::web::patch()
                            .to(patch_zoo_example_io_v1_enclosure_status),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[1], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/enclosures/{name}/scale")
                    .route(
                        ::actix_web::web::get()
                            .to(read_zoo_example_io_v1_enclosure_scale),
                    )
                    .route(
                        ::actix_web::web::put()
                            .to(replace_zoo_example_io_v1_enclosure_scale),
                    )
                    .route(
                        ::actix_web::web::patch()
                            .to(patch_zoo_example_io_v1_enclosure_scale),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[1], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/enclosures/{name}/finalize")
                    .route(
                        ::actix_web::web::put()
                            .to(replace_zoo_example_io_v1_enclosure_finalize),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[1], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/enclosures/{name}/binding")
                    .route(
                        ::actix_web::web::post()
                            .to(create_zoo_example_io_v1_enclosure_binding),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[1], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/enclosures/{name}/eviction")
                    .route(
                        ::actix_web::web::post()
                            .to(create_zoo_example_io_v1_enclosure_eviction),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[1], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/enclosures/{name}/log")
                    .route(
                        ::actix_web::web::get().to(read_zoo_example_io_v1_enclosure_log),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[1], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/watch/enclosures")
                    .route(
                        ::actix_web::web::get()
                            .to(watch_zoo_example_io_v1_enclosure_list),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[1], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/watch/enclosures/{name}")
                    .route(::actix_web::web::get().to(watch_zoo_example_io_v1_enclosure))
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[1], &req)
                        }),
                    ),
            ),
    );
    cfg.service(
        ::actix_web::web::scope("/apis/tickets.example.io/v1alpha1")
            .service(
                ::actix_web::web::resource("/")
                    .route(
                        ::actix_web::web::get()
                            .to(get_tickets_example_io_v1alpha1_api_resources),
                    ),
            )
            .service(
                ::actix_web::web::resource("")
                    .route(
                        ::actix_web::web::get()
                            .to(get_tickets_example_io_v1alpha1_api_resources),
                    ),
            )
            .service(
                ::actix_web::web::resource("/namespaces/{namespace}/ticketrequests")
                    .route(
                        ::actix_web::web::post()
                            .to(
                                create_tickets_example_io_v1alpha1_namespaced_ticket_request,
                            ),
                    )
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[3], &req)
                        }),
                    ),
            ),
    );
    cfg.service(
        ::actix_web::web::scope("/apis/actions.example.io/v1")
            .service(
                ::actix_web::web::resource("/")
                    .route(
                        ::actix_web::web::get()
                            .to(get_actions_example_io_v1_api_resources),
                    ),
            )
            .service(
                ::actix_web::web::resource("")
                    .route(
                        ::actix_web::web::get()
                            .to(get_actions_example_io_v1_api_resources),
                    ),
            )
            .service(
                ::actix_web::web::resource("/namespaces/{namespace}/animals/{name}/feed")
                    .route(::actix_web::web::put().to(v1_feed_animal))
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[0], &req)
                        }),
                    ),
            )
            .service(
                ::actix_web::web::resource("/namespaces/{namespace}/animals/{name}/mood")
                    .route(::actix_web::web::get().to(v1_mood_animal))
                    .default_service(
                        ::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                            self::rt::method_not_allowed(&RESOURCES[0], &req)
                        }),
                    ),
            ),
    );
    cfg.service(
        ::actix_web::web::resource("/").route(::actix_web::web::get().to(get_root_paths)),
    );
    cfg.service(
        ::actix_web::web::resource("/api")
            .route(::actix_web::web::get().to(get_core_api_versions)),
    );
    cfg.service(
        ::actix_web::web::resource("/api/")
            .route(::actix_web::web::get().to(get_core_api_versions)),
    );
    cfg.service(
        ::actix_web::web::resource("/apis")
            .route(::actix_web::web::get().to(get_api_versions)),
    );
    cfg.service(
        ::actix_web::web::resource("/apis/")
            .route(::actix_web::web::get().to(get_api_versions)),
    );
    cfg.service(
        ::actix_web::web::resource("/version")
            .route(::actix_web::web::get().to(get_code_version)),
    );
    cfg.service(
        ::actix_web::web::resource("/healthz")
            .route(::actix_web::web::get().to(get_healthz)),
    );
    cfg.service(
        ::actix_web::web::resource("/livez").route(::actix_web::web::get().to(get_livez)),
    );
    cfg.service(
        ::actix_web::web::resource("/readyz")
            .route(::actix_web::web::get().to(get_readyz)),
    );
    cfg.service(
        ::actix_web::web::resource("/openapi/v2")
            .route(::actix_web::web::get().to(get_openapi_v2)),
    );
    cfg.service(
        ::actix_web::web::resource("/apis/zoo.example.io/")
            .route(::actix_web::web::get().to(get_zoo_example_io_api_group)),
    );
    cfg.service(
        ::actix_web::web::resource("/apis/zoo.example.io")
            .route(::actix_web::web::get().to(get_zoo_example_io_api_group)),
    );
    cfg.service(
        ::actix_web::web::resource("/reset")
            .route(::actix_web::web::post().to(reset_fixtures)),
    );
    cfg.service(
        ::actix_web::web::resource("/apis/tickets.example.io/")
            .route(::actix_web::web::get().to(get_tickets_example_io_api_group)),
    );
    cfg.service(
        ::actix_web::web::resource("/apis/tickets.example.io")
            .route(::actix_web::web::get().to(get_tickets_example_io_api_group)),
    );
    cfg.service(
        ::actix_web::web::resource("/apis/actions.example.io/")
            .route(::actix_web::web::get().to(get_actions_example_io_api_group)),
    );
    cfg.service(
        ::actix_web::web::resource("/apis/actions.example.io")
            .route(::actix_web::web::get().to(get_actions_example_io_api_group)),
    );
}
/// `getRootPaths`: `GET /`
async fn get_root_paths(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::root(&state, &req).await
}
/// `getCoreAPIVersions`: `GET /api`
async fn get_core_api_versions(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::api(&state, &req).await
}
/// `getAPIVersions`: `GET /apis`
async fn get_api_versions(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::apis(&state, &req).await
}
/// `getCodeVersion`: `GET /version`
async fn get_code_version(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::version(&state, &req).await
}
/// `getHealthz`: `GET /healthz`
async fn get_healthz(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::ping(&state, &req).await
}
/// `getLivez`: `GET /livez`
async fn get_livez(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::ping(&state, &req).await
}
/// `getReadyz`: `GET /readyz`
async fn get_readyz(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::ready(&state, &req).await
}
/// `getOpenapiV2`: `GET /openapi/v2`
async fn get_openapi_v2(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::openapi_v2(&state, &req).await
}
/// `getOpenapiV3Index`: `GET /openapi/v3`
async fn get_openapi_v3_index(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::openapi_v3_index(&state, &req).await
}
/// `getOpenapiV3Document`: `GET /openapi/v3/apis/{group}/{version}`
async fn get_openapi_v3_document(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String, ::std::string::String)>,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (group, version) = path.into_inner();
    self::rt::openapi_v3_document(&state, &req, group, version).await
}
/// `getZooExampleIoAPIGroup`: `GET /apis/zoo.example.io/`
async fn get_zoo_example_io_api_group(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::api_group(&state, &req, &GROUPS[0]).await
}
/// `getZooExampleIoV1beta1APIResources`: `GET /apis/zoo.example.io/v1beta1/`
async fn get_zoo_example_io_v1beta1_api_resources(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::api_resources(&state, &req, &GROUPS[0], "v1beta1").await
}
/// `listZooExampleIoV1beta1NamespacedAnimal`: `GET /apis/zoo.example.io/v1beta1/namespaces/{namespace}/animals`
async fn list_zoo_example_io_v1beta1_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace,) = path.into_inner();
    self::rt::list(
            &state,
            &RESOURCES[2],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::None,
            ),
            &req,
        )
        .await
}
/// `createZooExampleIoV1beta1NamespacedAnimal`: `POST /apis/zoo.example.io/v1beta1/namespaces/{namespace}/animals`
async fn create_zoo_example_io_v1beta1_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace,) = path.into_inner();
    self::rt::create(
            &state,
            &RESOURCES[2],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::None,
            ),
            &req,
            body,
        )
        .await
}
/// `deleteZooExampleIoV1beta1CollectionNamespacedAnimal`: `DELETE /apis/zoo.example.io/v1beta1/namespaces/{namespace}/animals`
async fn delete_zoo_example_io_v1beta1_collection_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace,) = path.into_inner();
    self::rt::delete_collection(
            &state,
            &RESOURCES[2],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::None,
            ),
            &req,
            body,
        )
        .await
}
/// `readZooExampleIoV1beta1NamespacedAnimal`: `GET /apis/zoo.example.io/v1beta1/namespaces/{namespace}/animals/{name}`
async fn read_zoo_example_io_v1beta1_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String, ::std::string::String)>,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace, name) = path.into_inner();
    self::rt::get(
            &state,
            &RESOURCES[2],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::Some(name),
            ),
            &req,
        )
        .await
}
/// `replaceZooExampleIoV1beta1NamespacedAnimal`: `PUT /apis/zoo.example.io/v1beta1/namespaces/{namespace}/animals/{name}`
async fn replace_zoo_example_io_v1beta1_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String, ::std::string::String)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace, name) = path.into_inner();
    self::rt::update(
            &state,
            &RESOURCES[2],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `patchZooExampleIoV1beta1NamespacedAnimal`: `PATCH /apis/zoo.example.io/v1beta1/namespaces/{namespace}/animals/{name}`
async fn patch_zoo_example_io_v1beta1_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String, ::std::string::String)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace, name) = path.into_inner();
    self::rt::patch(
            &state,
            &RESOURCES[2],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `deleteZooExampleIoV1beta1NamespacedAnimal`: `DELETE /apis/zoo.example.io/v1beta1/namespaces/{namespace}/animals/{name}`
async fn delete_zoo_example_io_v1beta1_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String, ::std::string::String)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace, name) = path.into_inner();
    self::rt::delete(
            &state,
            &RESOURCES[2],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `listZooExampleIoV1beta1AnimalForAllNamespaces`: `GET /apis/zoo.example.io/v1beta1/animals`
async fn list_zoo_example_io_v1beta1_animal_for_all_namespaces(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::list(
            &state,
            &RESOURCES[2],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::None,
            ),
            &req,
        )
        .await
}
/// `watchZooExampleIoV1beta1NamespacedAnimalList`: `GET /apis/zoo.example.io/v1beta1/watch/namespaces/{namespace}/animals`
async fn watch_zoo_example_io_v1beta1_namespaced_animal_list(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace,) = path.into_inner();
    self::rt::watch(
            &state,
            &RESOURCES[2],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::None,
            ),
            &req,
        )
        .await
}
/// `watchZooExampleIoV1beta1NamespacedAnimal`: `GET /apis/zoo.example.io/v1beta1/watch/namespaces/{namespace}/animals/{name}`
async fn watch_zoo_example_io_v1beta1_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String, ::std::string::String)>,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace, name) = path.into_inner();
    self::rt::watch(
            &state,
            &RESOURCES[2],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::Some(name),
            ),
            &req,
        )
        .await
}
/// `watchZooExampleIoV1beta1AnimalListForAllNamespaces`: `GET /apis/zoo.example.io/v1beta1/watch/animals`
async fn watch_zoo_example_io_v1beta1_animal_list_for_all_namespaces(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::watch(
            &state,
            &RESOURCES[2],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::None,
            ),
            &req,
        )
        .await
}
/// `getZooExampleIoV1beta1Healthz`: `GET /apis/zoo.example.io/v1beta1/healthz`
async fn get_zoo_example_io_v1beta1_healthz(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::store_probe(&state, &req).await
}
/// `resetFixtures`: `POST /reset`
async fn reset_fixtures(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::reset(&state, &req).await
}
/// `getZooExampleIoV1APIResources`: `GET /apis/zoo.example.io/v1/`
async fn get_zoo_example_io_v1_api_resources(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::api_resources(&state, &req, &GROUPS[0], "v1").await
}
/// `listZooExampleIoV1NamespacedAnimal`: `GET /apis/zoo.example.io/v1/namespaces/{namespace}/animals`
async fn list_zoo_example_io_v1_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace,) = path.into_inner();
    self::rt::list(
            &state,
            &RESOURCES[0],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::None,
            ),
            &req,
        )
        .await
}
/// `createZooExampleIoV1NamespacedAnimal`: `POST /apis/zoo.example.io/v1/namespaces/{namespace}/animals`
async fn create_zoo_example_io_v1_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace,) = path.into_inner();
    self::rt::create(
            &state,
            &RESOURCES[0],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::None,
            ),
            &req,
            body,
        )
        .await
}
/// `deleteZooExampleIoV1CollectionNamespacedAnimal`: `DELETE /apis/zoo.example.io/v1/namespaces/{namespace}/animals`
async fn delete_zoo_example_io_v1_collection_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace,) = path.into_inner();
    self::rt::delete_collection(
            &state,
            &RESOURCES[0],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::None,
            ),
            &req,
            body,
        )
        .await
}
/// `readZooExampleIoV1NamespacedAnimal`: `GET /apis/zoo.example.io/v1/namespaces/{namespace}/animals/{name}`
async fn read_zoo_example_io_v1_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String, ::std::string::String)>,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace, name) = path.into_inner();
    self::rt::get(
            &state,
            &RESOURCES[0],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::Some(name),
            ),
            &req,
        )
        .await
}
/// `replaceZooExampleIoV1NamespacedAnimal`: `PUT /apis/zoo.example.io/v1/namespaces/{namespace}/animals/{name}`
async fn replace_zoo_example_io_v1_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String, ::std::string::String)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace, name) = path.into_inner();
    self::rt::update(
            &state,
            &RESOURCES[0],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `patchZooExampleIoV1NamespacedAnimal`: `PATCH /apis/zoo.example.io/v1/namespaces/{namespace}/animals/{name}`
async fn patch_zoo_example_io_v1_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String, ::std::string::String)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace, name) = path.into_inner();
    self::rt::patch(
            &state,
            &RESOURCES[0],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `deleteZooExampleIoV1NamespacedAnimal`: `DELETE /apis/zoo.example.io/v1/namespaces/{namespace}/animals/{name}`
async fn delete_zoo_example_io_v1_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String, ::std::string::String)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace, name) = path.into_inner();
    self::rt::delete(
            &state,
            &RESOURCES[0],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `listZooExampleIoV1AnimalForAllNamespaces`: `GET /apis/zoo.example.io/v1/animals`
async fn list_zoo_example_io_v1_animal_for_all_namespaces(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::list(
            &state,
            &RESOURCES[0],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::None,
            ),
            &req,
        )
        .await
}
/// `watchZooExampleIoV1NamespacedAnimalList`: `GET /apis/zoo.example.io/v1/watch/namespaces/{namespace}/animals`
async fn watch_zoo_example_io_v1_namespaced_animal_list(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace,) = path.into_inner();
    self::rt::watch(
            &state,
            &RESOURCES[0],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::None,
            ),
            &req,
        )
        .await
}
/// `watchZooExampleIoV1NamespacedAnimal`: `GET /apis/zoo.example.io/v1/watch/namespaces/{namespace}/animals/{name}`
async fn watch_zoo_example_io_v1_namespaced_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String, ::std::string::String)>,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace, name) = path.into_inner();
    self::rt::watch(
            &state,
            &RESOURCES[0],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::Some(name),
            ),
            &req,
        )
        .await
}
/// `watchZooExampleIoV1AnimalListForAllNamespaces`: `GET /apis/zoo.example.io/v1/watch/animals`
async fn watch_zoo_example_io_v1_animal_list_for_all_namespaces(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::watch(
            &state,
            &RESOURCES[0],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::None,
            ),
            &req,
        )
        .await
}
/// `listZooExampleIoV1Enclosure`: `GET /apis/zoo.example.io/v1/enclosures`
async fn list_zoo_example_io_v1_enclosure(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::list(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::None,
            ),
            &req,
        )
        .await
}
/// `createZooExampleIoV1Enclosure`: `POST /apis/zoo.example.io/v1/enclosures`
async fn create_zoo_example_io_v1_enclosure(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::create(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::None,
            ),
            &req,
            body,
        )
        .await
}
/// `deleteZooExampleIoV1CollectionEnclosure`: `DELETE /apis/zoo.example.io/v1/enclosures`
async fn delete_zoo_example_io_v1_collection_enclosure(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::delete_collection(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::None,
            ),
            &req,
            body,
        )
        .await
}
/// `readZooExampleIoV1Enclosure`: `GET /apis/zoo.example.io/v1/enclosures/{name}`
async fn read_zoo_example_io_v1_enclosure(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (name,) = path.into_inner();
    self::rt::get(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::Some(name),
            ),
            &req,
        )
        .await
}
/// `replaceZooExampleIoV1Enclosure`: `PUT /apis/zoo.example.io/v1/enclosures/{name}`
async fn replace_zoo_example_io_v1_enclosure(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (name,) = path.into_inner();
    self::rt::update(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `patchZooExampleIoV1Enclosure`: `PATCH /apis/zoo.example.io/v1/enclosures/{name}`
async fn patch_zoo_example_io_v1_enclosure(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (name,) = path.into_inner();
    self::rt::patch(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `deleteZooExampleIoV1Enclosure`: `DELETE /apis/zoo.example.io/v1/enclosures/{name}`
async fn delete_zoo_example_io_v1_enclosure(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (name,) = path.into_inner();
    self::rt::delete(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `readZooExampleIoV1EnclosureStatus`: `GET /apis/zoo.example.io/v1/enclosures/{name}/status`
async fn read_zoo_example_io_v1_enclosure_status(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (name,) = path.into_inner();
    self::rt::get_status(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::Some(name),
            ),
            &req,
        )
        .await
}
/// `replaceZooExampleIoV1EnclosureStatus`: `PUT /apis/zoo.example.io/v1/enclosures/{name}/status`
async fn replace_zoo_example_io_v1_enclosure_status(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (name,) = path.into_inner();
    self::rt::update_status(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `patchZooExampleIoV1EnclosureStatus`: `PATCH /apis/zoo.example.io/v1/enclosures/{name}/status`
async fn patch_zoo_example_io_v1_enclosure_status(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (name,) = path.into_inner();
    self::rt::patch_status(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `readZooExampleIoV1EnclosureScale`: `GET /apis/zoo.example.io/v1/enclosures/{name}/scale`
async fn read_zoo_example_io_v1_enclosure_scale(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (name,) = path.into_inner();
    self::rt::get_scale(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::Some(name),
            ),
            &req,
        )
        .await
}
/// `replaceZooExampleIoV1EnclosureScale`: `PUT /apis/zoo.example.io/v1/enclosures/{name}/scale`
async fn replace_zoo_example_io_v1_enclosure_scale(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (name,) = path.into_inner();
    self::rt::update_scale(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `patchZooExampleIoV1EnclosureScale`: `PATCH /apis/zoo.example.io/v1/enclosures/{name}/scale`
async fn patch_zoo_example_io_v1_enclosure_scale(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (name,) = path.into_inner();
    self::rt::patch_scale(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `replaceZooExampleIoV1EnclosureFinalize`: `PUT /apis/zoo.example.io/v1/enclosures/{name}/finalize`
async fn replace_zoo_example_io_v1_enclosure_finalize(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (name,) = path.into_inner();
    self::rt::update_finalize(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `createZooExampleIoV1EnclosureBinding`: `POST /apis/zoo.example.io/v1/enclosures/{name}/binding`
async fn create_zoo_example_io_v1_enclosure_binding(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (name,) = path.into_inner();
    self::rt::create_binding(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `createZooExampleIoV1EnclosureEviction`: `POST /apis/zoo.example.io/v1/enclosures/{name}/eviction`
async fn create_zoo_example_io_v1_enclosure_eviction(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (name,) = path.into_inner();
    self::rt::create_eviction(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::Some(name),
            ),
            &req,
            body,
        )
        .await
}
/// `readZooExampleIoV1EnclosureLog`: `GET /apis/zoo.example.io/v1/enclosures/{name}/log`
async fn read_zoo_example_io_v1_enclosure_log(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (name,) = path.into_inner();
    self::rt::get_log(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::Some(name),
            ),
            &req,
        )
        .await
}
/// `watchZooExampleIoV1EnclosureList`: `GET /apis/zoo.example.io/v1/watch/enclosures`
async fn watch_zoo_example_io_v1_enclosure_list(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::watch(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::None,
            ),
            &req,
        )
        .await
}
/// `watchZooExampleIoV1Enclosure`: `GET /apis/zoo.example.io/v1/watch/enclosures/{name}`
async fn watch_zoo_example_io_v1_enclosure(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (name,) = path.into_inner();
    self::rt::watch(
            &state,
            &RESOURCES[1],
            self::rt::Target::new(
                ::std::option::Option::None,
                ::std::option::Option::Some(name),
            ),
            &req,
        )
        .await
}
/// `getTicketsExampleIoAPIGroup`: `GET /apis/tickets.example.io/`
async fn get_tickets_example_io_api_group(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::api_group(&state, &req, &GROUPS[1]).await
}
/// `getTicketsExampleIoV1alpha1APIResources`: `GET /apis/tickets.example.io/v1alpha1/`
async fn get_tickets_example_io_v1alpha1_api_resources(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::api_resources(&state, &req, &GROUPS[1], "v1alpha1").await
}
/// `createTicketsExampleIoV1alpha1NamespacedTicketRequest`: `POST /apis/tickets.example.io/v1alpha1/namespaces/{namespace}/ticketrequests`
async fn create_tickets_example_io_v1alpha1_namespaced_ticket_request(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String,)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace,) = path.into_inner();
    self::rt::create(
            &state,
            &RESOURCES[3],
            self::rt::Target::new(
                ::std::option::Option::Some(namespace),
                ::std::option::Option::None,
            ),
            &req,
            body,
        )
        .await
}
/// `getActionsExampleIoAPIGroup`: `GET /apis/actions.example.io/`
async fn get_actions_example_io_api_group(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::api_group(&state, &req, &GROUPS[2]).await
}
/// `getActionsExampleIoV1APIResources`: `GET /apis/actions.example.io/v1/`
async fn get_actions_example_io_v1_api_resources(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    self::rt::api_resources(&state, &req, &GROUPS[2], "v1").await
}
/// `v1FeedAnimal`: `PUT /apis/actions.example.io/v1/namespaces/{namespace}/animals/{name}/feed`
async fn v1_feed_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String, ::std::string::String)>,
    body: ::actix_web::web::Bytes,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace, name) = path.into_inner();
    self::rt::action(
            &state,
            &RESOURCES[0],
            "feed",
            self::rt::Target::new(Some(namespace), ::std::option::Option::Some(name)),
            &req,
            body,
        )
        .await
}
/// `v1MoodAnimal`: `GET /apis/actions.example.io/v1/namespaces/{namespace}/animals/{name}/mood`
async fn v1_mood_animal(
    state: ::actix_web::web::Data<self::rt::AppState>,
    req: ::actix_web::HttpRequest,
    path: ::actix_web::web::Path<(::std::string::String, ::std::string::String)>,
    payload: ::actix_web::web::Payload,
) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
    let (namespace, name) = path.into_inner();
    self::rt::action_read(
            &state,
            &RESOURCES[0],
            "mood",
            self::rt::Target::new(Some(namespace), ::std::option::Option::Some(name)),
            &[],
            &req,
            payload,
        )
        .await
}
