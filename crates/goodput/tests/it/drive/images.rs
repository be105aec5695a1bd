//! Images in chat requests (#40, item 2): the bodies a run sends carry exactly the
//! images asked for, read the way the simulator reads them (its own parser:
//! `image_url` parts, base64 data URLs, sizes from the PNG or JPEG header), the
//! same on every build of the plan, and different from one request to the next.

use goodput::define::plan::chat_fields;
use goodput::define::profile::{Api, Overrides, Profile};
use goodput::define::requests::Builder;
use goodput_sim::server::images::images;
use goodput_sim::server::openai::Message;

fn builder(format: &str) -> (Builder, u64) {
    let toml = format!(
        "name = \"t\"\n[slo]\nttft_ms = 1000\n[load]\npoints = [1]\nrequests_per_trial = 4\n\
         [workload]\ninput_tokens = 12\noutput_tokens = 3\ncalibrate = false\nimages = 3\n\
         image_size = [64, 48]\nimage_format = \"{format}\"\n\
         [engines.r]\nurl = \"http://127.0.0.1:1\"\nmodel = \"m\"\napi = \"chat\"\n"
    );
    let plan = Profile::parse(&toml, "t.toml")
        .unwrap()
        .into_plan("t.toml", &Overrides::default())
        .unwrap();
    let b = Builder {
        workload: plan.workload.clone(),
        model: "m".into(),
        api: Api::Chat,
        tokens_per_word: 1.0,
        chat_fields: chat_fields(&plan.engines["r"], plan.tools.as_ref()),
        salt: None,
        images: plan.images,
    };
    (b, plan.seed)
}

#[test]
fn every_body_carries_the_images_asked_for() {
    for format in ["png", "jpeg"] {
        let (b, seed) = builder(format);
        let requests = b.build(4, seed, 0);
        let again = b.build(4, seed, 0);
        let mut seen = Vec::new();
        for (r, same) in requests.iter().zip(&again) {
            assert_eq!(r.body, same.body, "seeded");
            let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            let messages: Vec<Message> = serde_json::from_value(body["messages"].clone()).unwrap();
            let got = images(&messages).expect("the simulator reads them");
            assert_eq!(got.len(), 3, "{format}");
            for im in &got {
                assert_eq!((im.width, im.height), (64, 48), "{format}");
                seen.push(im.hash);
            }
            let sent = r.asked.images.unwrap();
            assert_eq!((sent.count, sent.width, sent.height), (3, 64, 48));
            let url = body["messages"][0]["content"][1]["image_url"]["url"]
                .as_str()
                .unwrap();
            assert!(url.starts_with(&format!("data:image/{format};base64,")));
        }
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 12, "{format}: every image differs");
    }
}
