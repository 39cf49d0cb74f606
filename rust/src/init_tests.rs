// Unit tests of `init.rs`, kept beside it so that file stays short.
// Expected values and texts come from the reference's published golden values or
// from an independent Python/NumPy computation of its formulas, never from this code.
use super::*;

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

const U0: [f64; 3] = [0.30117025575600564, 0.6844469008501619, 0.30876562278717756];

#[test]
fn pretty_shape_nests_dims_down_to_scalar() {
    assert_eq!(pretty_shape(&[]), "scalar");
    assert_eq!(pretty_shape(&[5]), "dim 5 (scalar)");
    assert_eq!(pretty_shape(&[2, 3]), "dim 2 (dim 3 (scalar))");
}

#[test]
fn fans_of_linear_and_conv_shapes() {
    assert_eq!(fan_in_out(&[2, 3]), Ok((3, 2)));
    // [out, in, kh, kw]: (in*kh*kw, out*kh*kw).
    assert_eq!(fan_in_out(&[4, 3, 5, 5]), Ok((75, 100)));
    assert_eq!(fan_in_out(&[6, 2, 3]), Ok((6, 18)));
    assert_eq!(fan_in_out(&[5]), Err(InitError::FanRank { shape: vec![5] }));
    assert!(matches!(
        fan_in_out(&[usize::MAX, 2, 2]),
        Err(InitError::SizeOverflow { .. })
    ));
}

#[test]
fn bounds_by_hand() {
    assert_eq!(
        xavier_bound(3, 2).to_bits(),
        1.0954451150103321f64.to_bits()
    );
    assert_eq!(xavier_bound(75, 100), (6.0f64 / 175.0).sqrt());
    assert_eq!(kaiming_bound(75).to_bits(), 0.282842712474619f64.to_bits());
    assert_eq!(kaiming_bound(3), 2.0f64.sqrt());
    // Zero fans are not checked, as in the reference.
    assert_eq!(xavier_bound(0, 0), f64::INFINITY);
    assert!(FloatInit::KaimingUniform { fan_in: 0, seed: 0 }
        .values_f64(&[1, 1])
        .is_ok_and(|v| v[0].is_nan()));
}

#[test]
fn shape_helpers_pick_fans_and_seed() {
    assert_eq!(
        xavier_uniform_for_shape(&[4, 3, 5, 5], 9),
        Ok(FloatInit::XavierUniform {
            fan_in: 75,
            fan_out: 100,
            seed: 9
        })
    );
    assert_eq!(
        kaiming_uniform_for_shape(&[4, 3, 5, 5], 9),
        Ok(FloatInit::KaimingUniform {
            fan_in: 75,
            seed: 9
        })
    );
    assert_eq!(
        xavier_linear_weight(2, 3, 1),
        FloatInit::XavierUniform {
            fan_in: 3,
            fan_out: 2,
            seed: 1
        }
    );
    assert_eq!(
        kaiming_linear_weight(2, 3, 1),
        FloatInit::KaimingUniform { fan_in: 3, seed: 1 }
    );
}

#[test]
fn rank_messages() {
    let x = xavier_uniform_for_shape(&[5], 0).unwrap_err();
    assert_eq!(
        x.to_string(),
        "torch.runtimeInit: Xavier initialization expects at least 2 dimensions, got dim 5 (scalar)"
    );
    let k = kaiming_uniform_for_shape(&[], 0).unwrap_err();
    assert_eq!(
        k.to_string(),
        "torch.runtimeInit: Kaiming initialization expects at least 2 dimensions, got scalar"
    );
}

#[test]
fn constant_and_flat_values() {
    assert_eq!(FloatInit::Zeros.values_f64(&[2, 2]), Ok(vec![0.0; 4]));
    assert_eq!(FloatInit::Ones.values_f64(&[3]), Ok(vec![1.0; 3]));
    assert_eq!(FloatInit::Ones.values_f64(&[]), Ok(vec![1.0]));
    assert_eq!(FloatInit::Ones.values_f32(&[2]), Ok(vec![1.0f32; 2]));
    let flat = FloatInit::Flat(vec![0.1, -2.5, 3.0]);
    assert_eq!(flat.values_f64(&[3]), Ok(vec![0.1, -2.5, 3.0]));
    let f32s = flat.values_f32(&[1, 3]).unwrap();
    assert_eq!(f32s[0].to_bits(), 0x3dcc_cccd);
    assert_eq!(&f32s[1..], &[-2.5f32, 3.0]);
}

#[test]
fn flat_length_message() {
    let err = FloatInit::Flat(vec![1.0; 4])
        .values_f64(&[2, 3])
        .unwrap_err();
    assert_eq!(
        err,
        InitError::FlatLength {
            expected: 6,
            got: 4
        }
    );
    assert_eq!(
        err.to_string(),
        "torch.runtimeInit: flat initializer length mismatch (expected 6, got 4)"
    );
}

#[test]
fn uniform_is_lo_plus_u_times_width() {
    let v = FloatInit::Uniform {
        lo: -1.0,
        hi: 3.0,
        seed: 0,
    }
    .values_f64(&[3])
    .unwrap();
    let by_hand: Vec<f64> = U0.iter().map(|u| -1.0 + u * 4.0).collect();
    assert_eq!(bits(&v), bits(&by_hand));
    assert_eq!(
        bits(&v),
        bits(&[0.20468102302402258, 1.7377876034006476, 0.23506249114871025])
    );
}

#[test]
fn xavier_runtime_values_for_linear_weight() {
    let v = xavier_linear_weight(2, 3, 0).values_f64(&[2, 3]).unwrap();
    let l = (6.0f64 / 5.0).sqrt();
    for (x, u) in v.iter().zip(U0) {
        assert_eq!(x.to_bits(), (-l + u * (2.0 * l)).to_bits());
    }
    assert_eq!(
        bits(&v),
        bits(&[
            -0.43561414410167465,
            0.40410291303020984,
            -0.418973528679659,
            -0.5883387814583382,
            0.596123796539336,
            -0.950010076395837,
        ])
    );
}

#[test]
fn kaiming_runtime_values_for_conv_weight() {
    let init = kaiming_uniform_for_shape(&[4, 3, 5, 5], 7).unwrap();
    let v = init.values_f64(&[4, 3, 5, 5]).unwrap();
    assert_eq!(v.len(), 300);
    assert_eq!(
        bits(&v[..3]),
        bits(&[
            -0.0029364461415368193,
            0.229224757389895,
            0.21849812761151444
        ])
    );
    let l = (6.0f64 / 75.0).sqrt();
    assert!(v.iter().all(|x| (-l..l).contains(x)));
}

#[test]
fn binary32_values_follow_the_cuda_formula() {
    // NumPy float32: lo32 + f32(hi - lo) * f32(u), each op rounded once.
    let u = FloatInit::Uniform {
        lo: -0.1,
        hi: 0.3,
        seed: 5,
    }
    .values_f32(&[3])
    .unwrap();
    let got: Vec<u32> = u.iter().map(|x| x.to_bits()).collect();
    assert_eq!(got, vec![0x3d9d_4407, 0x3dc5_3809, 0x3d88_ecc5]);
    let x = xavier_linear_weight(2, 3, 0).values_f32(&[2, 3]).unwrap();
    let got: Vec<u32> = x.iter().map(|x| x.to_bits()).collect();
    assert_eq!(
        got,
        vec![
            0xbedf_08d2,
            0x3ece_e694,
            0xbed6_83b4,
            0xbf16_9d5f,
            0x3f18_9b92,
            0xbf73_33dd
        ]
    );
}

#[test]
fn plan_count_messages() {
    let shapes = [vec![2, 3], vec![2]];
    let longer = Plan::new(&shapes, vec![FloatInit::Zeros; 3]).unwrap_err();
    assert_eq!(
        longer.to_string(),
        "torch.runtimeInit: initializer list longer than parameter list"
    );
    let shorter = Plan::new(&shapes, vec![FloatInit::Zeros]).unwrap_err();
    assert_eq!(
        shorter.to_string(),
        "torch.runtimeInit: initializer list shorter than parameter list"
    );
    // The count is checked before any payload.
    let both = Plan::new(&shapes, vec![FloatInit::Flat(vec![]); 3]);
    assert_eq!(both, Err(InitError::ListLonger));
}

#[test]
fn plan_checks_fits_in_parameter_order() {
    let shapes: [&[usize]; 3] = [&[2, 3], &[2], &[4]];
    let err = Plan::new(
        &shapes,
        vec![
            FloatInit::Ones,
            FloatInit::Flat(vec![1.0]),
            FloatInit::Flat(vec![0.0; 9]),
        ],
    );
    assert_eq!(
        err,
        Err(InitError::FlatLength {
            expected: 2,
            got: 1
        })
    );
}

#[test]
fn plan_values_in_order() {
    let shapes = [vec![2, 3], vec![2]];
    let plan = Plan::new(
        &shapes,
        vec![
            xavier_linear_weight(2, 3, 0),
            FloatInit::Flat(vec![0.5, -0.5]),
        ],
    )
    .unwrap();
    assert_eq!(plan.len(), 2);
    assert!(!plan.is_empty());
    assert_eq!(plan.shapes(), &shapes);
    let v = plan.values_f64();
    assert_eq!(v[0][0].to_bits(), (-0.43561414410167465f64).to_bits());
    assert_eq!(v[1], vec![0.5, -0.5]);
    assert_eq!(plan.values_f32()[1], vec![0.5f32, -0.5]);
    assert_eq!(plan.check_cuda_fit(), Ok(()));
    assert_eq!(plan.into_inits().len(), 2);
    let empty: [Vec<usize>; 0] = [];
    assert!(Plan::new(&empty, vec![]).is_ok_and(|p| p.is_empty()));
}

#[test]
fn cuda_buffer_limit_message() {
    assert_eq!(cuda_buffer_len(u32::MAX as usize), Ok(u32::MAX));
    let err = cuda_buffer_len(1 << 32).unwrap_err();
    assert_eq!(
        err.to_string(),
        "torch.runtimeInit: tensor too large for CUDA buffer API (4294967296 elements)"
    );
}

#[test]
fn layer_xavier_weight_golden() {
    let w = layer_xavier_weight(2, 3, 0).unwrap();
    assert_eq!(
        bits(&w),
        bits(&[
            -0.5782460996846068,
            -0.4851355966458112,
            0.7000633928601143,
            0.36777794626657645,
            -0.2539737556095877,
            0.26686683368456565,
        ])
    );
}

#[test]
fn layer_schemes() {
    // kaimingW(2, 3, seed 1): L = sqrt(6/3) = sqrt 2; first r is rand01(1, 0) from Appendix A.
    let w = layer_kaiming_weight(2, 3, 1).unwrap();
    let l = 2.0f64.sqrt();
    assert_eq!(
        w[0].to_bits(),
        (-l + 0.23645552527159452 * (2.0 * l)).to_bits()
    );
    assert_eq!(
        bits(&w),
        bits(&[
            -0.7454163408988089,
            -0.36975837244967713,
            0.011998279223295327,
            0.5794973803968353,
            -1.2712545921643565,
            -0.3690578259729753,
        ])
    );
    let r = LayerInit::Uniform { lo: -1.0, hi: 1.0 }.values(2, 0);
    assert_eq!(r[0], -1.0 + 0.23606797284446657 * 2.0);
    assert_eq!(LayerInit::Zeros.values(2, 0), vec![0.0; 2]);
    assert_eq!(LayerInit::Ones.values(1, 0), vec![1.0]);
}

#[test]
fn other_messages() {
    let e = InitError::FanRank { shape: vec![] };
    assert_eq!(
        e.to_string(),
        "torch.runtimeInit: fan-in/fan-out inference expects at least 2 dimensions, got scalar"
    );
    assert!(numel(&[usize::MAX, 2]).is_err());
}
