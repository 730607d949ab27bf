{
  "targets": [
    {
      "target_name": "reapkit",
      "sources": [
        "native/addon.cc",
        "native/errors.cc",
        "native/group.cc",
        "native/pdeathsig.cc",
        "native/process_handle.cc",
        "native/exit_watch.cc",
        "native/exit_watch_pidfd.cc",
        "native/exit_watch_kqueue.cc",
        "native/pipe_probe.cc",
        "native/peer_cred.cc",
        "native/stdin_watch.cc",
        "native/exec_report.cc",
        "native/terminal.cc",
        "native/proc_darwin.cc"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")"
      ],
      "defines": [
        "NAPI_VERSION=8",
        "NAPI_DISABLE_CPP_EXCEPTIONS",
        "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS",
        "NODE_ADDON_API_DISABLE_DEPRECATED"
      ],
      "cflags!": [
        "-fexceptions"
      ],
      "cflags_cc!": [
        "-fexceptions",
        "-std=gnu++17",
        "-std=gnu++20"
      ],
      "cflags_cc": [
        "-std=c++17",
        "-fno-exceptions",
        "-fvisibility=hidden",
        "-Wall",
        "-Wextra",
        "-Wno-unused-parameter"
      ],
      "conditions": [
        [
          "'<!(node scripts/probe-cc.js header sys/event.h)'=='1' or OS in ('mac', 'freebsd', 'openbsd', 'netbsd')",
          {
            "defines": [
              "REAPKIT_HAVE_SYS_EVENT_H=1"
            ]
          }
        ],
        [
          "OS=='win'",
          {
            "sources!": [
              "native/addon.cc",
              "native/group.cc",
              "native/pdeathsig.cc",
              "native/process_handle.cc",
              "native/exit_watch.cc",
              "native/exit_watch_pidfd.cc",
              "native/exit_watch_kqueue.cc",
              "native/pipe_probe.cc",
              "native/peer_cred.cc",
              "native/stdin_watch.cc",
              "native/exec_report.cc",
              "native/terminal.cc",
              "native/proc_darwin.cc"
            ],
            "sources": [
              "native/win/addon_win.cc",
              "native/win/exit_watch_win.cc",
              "native/win/job_win.cc",
              "native/win/parent_win.cc",
              "native/win/process_handle_win.cc"
            ],
            "defines": [
              "UNICODE",
              "_UNICODE",
              "_WIN32_WINNT=0x0602"
            ],
            "msvs_settings": {
              "VCCLCompilerTool": {
                "ExceptionHandling": 0,
                "AdditionalOptions": [
                  "/std:c++17"
                ]
              }
            }
          }
        ],
        [
          "OS=='mac'",
          {
            "xcode_settings": {
              "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
              "GCC_ENABLE_CPP_EXCEPTIONS": "NO",
              "GCC_SYMBOLS_PRIVATE_EXTERN": "YES",
              "MACOSX_DEPLOYMENT_TARGET": "10.15",
              "OTHER_CPLUSPLUSFLAGS": [
                "-fno-exceptions",
                "-Wall",
                "-Wextra",
                "-Wno-unused-parameter"
              ]
            }
          }
        ]
      ]
    }
  ],
  "conditions": [
    [
      "OS!='win'",
      {
        "targets": [
          {
            "target_name": "reapkit-exec",
            "variables": {
              "exec_musl_cc": "<!(node scripts/probe-cc.js musl-cc <(target_arch))"
            },
            "conditions": [
              [
                "OS=='linux' and exec_musl_cc!=''",
                {
                  "type": "none",
                  "actions": [
                    {
                      "action_name": "reapkit_exec_musl_static",
                      "inputs": [
                        "native/exec_helper.c",
                        "native/exec_pidns.c",
                        "native/exec_search.c",
                        "native/exec_pidns.h",
                        "native/exec_search.h"
                      ],
                      "outputs": [
                        "<(PRODUCT_DIR)/helper/reapkit-exec"
                      ],
                      "action": [
                        "<(exec_musl_cc)",
                        "-O2",
                        "-Wall",
                        "-Wextra",
                        "-static",
                        "-s",
                        "-o",
                        "<(PRODUCT_DIR)/helper/reapkit-exec",
                        "native/exec_helper.c",
                        "native/exec_pidns.c",
                        "native/exec_search.c"
                      ],
                      "message": "reapkit-exec: linked statically against musl (<(exec_musl_cc))"
                    }
                  ]
                },
                {
                  "type": "executable",
                  "product_dir": "<(PRODUCT_DIR)/helper",
                  "sources": [
                    "native/exec_helper.c",
                    "native/exec_pidns.c",
                    "native/exec_search.c"
                  ],
                  "cflags": [
                    "-O2",
                    "-Wall",
                    "-Wextra"
                  ],
                  "conditions": [
                    [
                      "OS=='linux'",
                      {
                        "ldflags": [
                          "-s"
                        ]
                      }
                    ],
                    [
                      "OS=='linux' and '<!(node scripts/probe-cc.js static)'=='1'",
                      {
                        "ldflags": [
                          "-static"
                        ]
                      }
                    ]
                  ],
                  "xcode_settings": {
                    "MACOSX_DEPLOYMENT_TARGET": "10.15",
                    "DEAD_CODE_STRIPPING": "YES"
                  }
                }
              ]
            ]
          },
          {
            "target_name": "reapkit-supervise",
            "type": "executable",
            "product_dir": "<(PRODUCT_DIR)/helper",
            "sources": [
              "native/supervise/options.c",
              "native/supervise/events.c",
              "native/supervise/signals.c",
              "native/supervise/command.c",
              "native/supervise/tty.c",
              "native/supervise/proctable.c",
              "native/supervise/cgroup_where.c",
              "native/supervise/cgroup.c",
              "native/supervise/stop.c",
              "native/supervise/host.c",
              "native/supervise/isolate.c",
              "native/supervise/container.c",
              "native/supervise/run_grammar.c",
              "native/supervise/owner.c",
              "native/supervise/engine.c",
              "native/supervise/looks.c",
              "native/supervise/main.c"
            ],
            "defines": [
              "REAPKIT_VERSION=<!(node -p \"require('./package.json').version\")"
            ],
            "cflags": [
              "-O2",
              "-Wall",
              "-Wextra"
            ],
            "conditions": [
              [
                "OS=='linux'",
                {
                  "ldflags": [
                    "-s"
                  ]
                }
              ],
              [
                "OS=='linux' and '<!(node scripts/probe-cc.js static)'=='1'",
                {
                  "ldflags": [
                    "-static"
                  ]
                }
              ]
            ],
            "xcode_settings": {
              "MACOSX_DEPLOYMENT_TARGET": "10.15",
              "DEAD_CODE_STRIPPING": "YES"
            }
          }
        ]
      }
    ],
    [
      "OS=='win'",
      {
        "targets": [
          {
            "target_name": "reapkit-job",
            "type": "executable",
            "product_dir": "<(PRODUCT_DIR)/helper",
            "sources": [
              "native/win/job_launcher.c"
            ],
            "defines": [
              "UNICODE",
              "_UNICODE"
            ],
            "msvs_settings": {
              "VCLinkerTool": {
                "SubSystem": 1
              }
            }
          }
        ]
      }
    ]
  ]
}
