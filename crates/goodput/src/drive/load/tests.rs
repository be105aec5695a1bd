use super::*;

#[test]
fn poisson_offsets_have_the_requested_mean_rate_and_are_seeded() {
    let a = arrival_offsets(100.0, 1.0, 5001, 9);
    assert_eq!(a, arrival_offsets(100.0, 1.0, 5001, 9));
    assert_ne!(a, arrival_offsets(100.0, 1.0, 5001, 10));
    assert_eq!(a[0], 0);
    assert!(a.windows(2).all(|w| w[0] <= w[1]));
    let mean_gap_s = a[5000] as f64 / 1e9 / 5000.0;
    assert!((mean_gap_s - 0.01).abs() < 0.001, "{mean_gap_s}");
}

#[test]
fn burstiness_changes_the_spread_not_the_mean() {
    let cv = |b: f64| {
        let a = arrival_offsets(10.0, b, 20001, 1);
        let gaps: Vec<f64> = a.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        (mean / 1e9, var.sqrt() / mean)
    };
    let (m1, cv1) = cv(1.0);
    let (m2, cv2) = cv(0.25);
    assert!((m1 - 0.1).abs() < 0.01 && (m2 - 0.1).abs() < 0.01);
    // Gamma: cv = 1/sqrt(shape): 1.0 and 2.0
    assert!(
        (cv1 - 1.0).abs() < 0.1 && (cv2 - 2.0).abs() < 0.2,
        "{cv1} {cv2}"
    );
}
